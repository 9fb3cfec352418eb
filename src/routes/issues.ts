import { Hono, type MiddlewareHandler } from 'hono';
import { validator } from 'hono/validator';
import * as z from 'zod/mini';
import { ApiError } from '../errors.js';
import { sendRead, waitUntilOf } from '../http.js';
import type { ArchiveQuery, PublicReads } from '../public-reads.js';
import { SLUG_PATTERN } from '../upstream.js';
import { firstValue, parseOrThrow, preprocess } from '../validation.js';

export interface IssuesRoutesOptions {
  reads: PublicReads;
  cacheControl: string;
  /** The largest useful offset: the archive never holds more issues than this. */
  maxOffset: number;
}

const SLUG_RULE = 'must be 1 to 200 letters, digits, "-" or "_", starting and ending with a letter or digit';

function wholeNumber(min: number, max: number, fallback: number) {
  const rule = `must be a whole number from ${min} to ${max}`;
  return preprocess(
    firstValue,
    // Digits only, then Number, then the range; an absent parameter takes the fallback.
    z.pipe(
      z.optional(
        z.pipe(
          z.pipe(z.string().check(z.regex(/^\d{1,9}$/, { error: rule })), z.transform(Number)),
          z.number().check(z.gte(min, { error: rule }), z.lte(max, { error: rule })),
        ),
      ),
      z.transform((value: number | undefined) => value ?? fallback),
    ),
  );
}

function createArchiveQuerySchema(maxOffset: number) {
  // Only these three are read: unknown parameters are dropped and never reach a cache key.
  return z.object({
    limit: wholeNumber(1, 100, 20),
    offset: wholeNumber(0, maxOffset, 0),
    category: preprocess(firstValue, z.optional(z.string().check(z.regex(SLUG_PATTERN, { error: `category ${SLUG_RULE}` })))),
  });
}

/** GET /api/issues and GET /api/issues/:slug (PRODUCT.md "The four public routes"). */
export function createIssuesRoutes(options: IssuesRoutesOptions) {
  const { reads, cacheControl } = options;
  const ArchiveQuerySchema = createArchiveQuerySchema(options.maxOffset);

  return new Hono()
    .get(
      '/issues',
      // Typed for `hc` as the client sends it: every parameter optional (limit 20, offset 0).
      validator('query', (query) => parseOrThrow(ArchiveQuerySchema, query)) as MiddlewareHandler<
        {},
        '/issues',
        { in: { query: { limit?: string; offset?: string; category?: string } }; out: { query: ArchiveQuery } }
      >,
      async function listIssues(c) {
        const read = await reads.archivePage(c.req.valid('query'), waitUntilOf(c));
        return sendRead(c, read, cacheControl);
      },
    )
    .get('/issues/:slug', async function getIssue(c) {
      // Hono has already percent-decoded the parameter, so `%2F`, `%00` or `%2E%2E` arrive
      // as the characters themselves and fail the pattern; a double encoding keeps a `%`.
      const slug = c.req.param('slug');
      if (!SLUG_PATTERN.test(slug)) {
        throw new ApiError('VALIDATION_ERROR', { details: [{ path: 'slug', message: `slug ${SLUG_RULE}` }] });
      }
      const read = await reads.issue(slug, waitUntilOf(c));
      return sendRead(c, read, cacheControl);
    });
}
