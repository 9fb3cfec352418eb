import { Hono, type Context, type MiddlewareHandler } from 'hono';
import { LRUCache } from 'lru-cache';
import * as z from '../zod.js';
import { ApiError } from '../errors.js';
import { sendRead, waitUntilOf } from '../http.js';
import type { ArchiveQuery, PublicReads } from '../reads/public-reads.js';
import { SLUG_PATTERN, SLUG_RULE } from '../slug.js';
import { firstValue, parseOrThrow, preprocess, wholeNumber } from '../validation.js';

export interface IssuesRoutesOptions {
  reads: PublicReads;
  cacheControl: string;
  /** The largest useful offset: the archive never holds more issues than this. */
  maxOffset: number;
  /** The visitor's IP, charged for the upstream reads the request causes. */
  clientIp?: (c: Context) => string | undefined;
}

/** Distinct archive query strings remembered with their validated form (bounded in count and bytes). */
const QUERY_MEMO_MAX_ENTRIES = 1024;
const QUERY_MEMO_MAX_BYTES = 1024 * 1024;


function createArchiveQuerySchema(maxOffset: number) {
  // Only these three are read: unknown parameters are dropped and never reach a cache key.
  return z.object({
    limit: wholeNumber(1, 100, 20, firstValue),
    offset: wholeNumber(0, maxOffset, 0, firstValue),
    category: preprocess(firstValue, z.optional(z.string().check(z.regex(SLUG_PATTERN, { error: `category ${SLUG_RULE}` })))),
  });
}

type ArchiveQueryValidator = MiddlewareHandler<
  {},
  '/issues',
  // Typed for `hc` as the client sends it: every parameter optional (limit 20, offset 0).
  { in: { query: { limit?: string; offset?: string; category?: string } }; out: { query: ArchiveQuery } }
>;

/**
 * Validates the archive query once per distinct query string: the result depends on that
 * string alone, and parsing it with zod on every cached hit cost more than the rest of the
 * route. (Hono's `validator('query')` copies the parsed query before a memo could be asked.)
 */
function createArchiveQueryValidator(maxOffset: number): ArchiveQueryValidator {
  const schema = createArchiveQuerySchema(maxOffset);
  const memo = new LRUCache<string, Readonly<ArchiveQuery>>({
    max: QUERY_MEMO_MAX_ENTRIES,
    maxSize: QUERY_MEMO_MAX_BYTES,
    sizeCalculation: (_query, search) => 2 * search.length + 64,
  });
  return async function validateArchiveQuery(c, next) {
    const url = c.req.url;
    const at = url.indexOf('?');
    const search = at === -1 ? '' : url.slice(at + 1);
    let query = memo.get(search);
    if (query === undefined) {
      query = Object.freeze(parseOrThrow(schema, c.req.queries()));
      memo.set(search, query);
    }
    c.req.addValidatedData('query', query);
    await next();
  };
}

/** GET /api/issues and GET /api/issues/:slug (docs/contract.md "The four public routes"). */
export function createIssuesRoutes(options: IssuesRoutesOptions) {
  const { reads, cacheControl, clientIp = () => undefined } = options;

  return new Hono()
    .get('/issues', createArchiveQueryValidator(options.maxOffset), async function listIssues(c) {
      const read = await reads.archivePage(c.req.valid('query'), waitUntilOf(c), clientIp(c));
      return sendRead(c, read, cacheControl);
    })
    .get('/issues/:slug', async function getIssue(c) {
      // Hono has already percent-decoded the parameter, so `%2F`, `%00` or `%2E%2E` arrive
      // as the characters themselves and fail the pattern; a double encoding keeps a `%`.
      const slug = c.req.param('slug');
      if (!SLUG_PATTERN.test(slug)) {
        throw new ApiError('VALIDATION_ERROR', { details: [{ path: 'slug', message: `slug ${SLUG_RULE}` }] });
      }
      const read = await reads.issue(slug, waitUntilOf(c), clientIp(c));
      return sendRead(c, read, cacheControl);
    });
}
