// The configured `z` (English messages; see core/zod.ts).
import * as z from './zod.js';
import { ApiError, type ValidationIssue } from './http/errors.js';

/**
 * JSON Schema keywords that openapi.json lays over what zod says of a request parameter or field
 * (`npm run openapi`): its wording, and what a pipeline through text hides from zod's output (a
 * whole number, an email address).
 */
export type JsonSchemaWords = Pick<z.core.JSONSchema.BaseSchema, 'description' | 'type' | 'format' | 'maxLength'>;

/**
 * `z.preprocess` of the classic build, which zod/mini lacks: `fn` runs on the raw input and
 * `schema` parses its result. Built exactly as the classic one is, a transform piped into the schema.
 */
export function preprocess<S extends z.ZodMiniType>(fn: (value: unknown) => unknown, schema: S) {
  return z.pipe(z.transform(fn), schema);
}

/**
 * Reports a problem from inside `z.transform`. zod/mini's transform context is the bare parse
 * payload, without the classic build's `ctx.addIssue`, so the issue is pushed the way that
 * method pushed it: a custom issue about the value being transformed.
 */
export function addIssue(ctx: z.core.ParsePayload, message: string): void {
  ctx.issues.push({ code: 'custom', message, input: ctx.value });
}

/**
 * Parses input with a zod schema; a failure becomes our VALIDATION_ERROR with
 * `[{ path, message }]` details in our own words (never zod's default dump, which can echo input).
 */
export function parseOrThrow<S extends z.ZodMiniType>(schema: S, input: unknown): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const details: ValidationIssue[] = result.error.issues.map((issue) => ({
    path: issue.path.length > 0 ? issue.path.map(String).join('.') : '(body)',
    message: issue.message,
  }));
  throw new ApiError('VALIDATION_ERROR', { details });
}

/** A query parameter given twice counts once: the first value, as `c.req.query()` reads it. */
export function firstValue(value: unknown): unknown {
  return Array.isArray(value) ? value[0] : value;
}

/**
 * Blank text means "not given": unset, empty and whitespace-only alike (env files often leave
 * `X=`, forms post empty fields); other text is trimmed.
 */
export function blankToUndefined(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  const text = value.trim();
  return text === '' ? undefined : text;
}

/**
 * A whole number from `min` to `max`, written in digits; absent, it takes `fallback`. `read`
 * first turns the raw input (a query parameter's values, an environment variable) into text.
 * Digits only, then Number, then the range: every way of failing reads the same rule.
 */
export function wholeNumber(min: number, max: number, fallback: number, read: (raw: unknown) => unknown) {
  const rule = `must be a whole number from ${min} to ${max}`;
  return preprocess(
    read,
    z._default(
      z.pipe(
        z.pipe(z.string({ error: rule }).check(z.regex(/^\d{1,16}$/, { error: rule })), z.transform(Number)),
        z.number().check(z.gte(min, { error: rule }), z.lte(max, { error: rule })),
      ),
      fallback,
    ),
  );
}
