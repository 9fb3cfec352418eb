// The configured `z` (English messages; see zod.ts).
import { z } from './zod.js';
import { ApiError, type ValidationIssue } from './errors.js';

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
