import type { z } from 'zod';
import { ApiError, type ValidationIssue } from './errors.js';

/**
 * Parses input with a zod schema; a failure becomes our VALIDATION_ERROR with
 * `[{ path, message }]` details in our own words (never zod's default dump, which can echo input).
 */
export function parseOrThrow<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
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
