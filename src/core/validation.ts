import * as z from './zod.js';
import { ApiError, type ValidationIssue } from './http/errors.js';

export type JsonSchemaWords = Pick<z.core.JSONSchema.BaseSchema, 'description' | 'type' | 'format' | 'maxLength'>;

/** The classic build's `z.preprocess`, which zod/mini lacks. */
export const preprocess = <S extends z.ZodMiniType>(fn: (value: unknown) => unknown, schema: S) => z.pipe(z.transform(fn), schema);

/** Our own VALIDATION_ERROR: zod's default dump can echo input. */
export function parseOrThrow<S extends z.ZodMiniType>(schema: S, input: unknown): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const details: ValidationIssue[] = result.error.issues.map((issue) => ({
    path: issue.path.length > 0 ? issue.path.map(String).join('.') : '(body)',
    message: issue.message,
  }));
  throw new ApiError('VALIDATION_ERROR', { details });
}

export const firstValue = (value: unknown): unknown => (Array.isArray(value) ? value[0] : value);

/** Env files leave `X=`, forms post empty fields: blank means "not given". */
export const blankToUndefined = (value: unknown): unknown => (typeof value === 'string' ? value.trim() || undefined : value);
export const optional = <S extends z.ZodMiniType>(schema: S) => preprocess(blankToUndefined, z.optional(schema));
export const atMost = (max: number) => z.maxLength(max, { error: `must be at most ${max} characters` });

export function wholeNumber(min: number, max: number, fallback: number, read: (raw: unknown) => unknown) {
  const rule = `must be a whole number from ${min} to ${max}`;
  const digits = z.pipe(z.string({ error: rule }).check(z.regex(/^\d{1,16}$/, { error: rule })), z.transform(Number));
  const inRange = z.number().check(z.gte(min, { error: rule }), z.lte(max, { error: rule }));
  return preprocess(read, z._default(z.pipe(digits, inRange), fallback));
}
