import { Hono, type MiddlewareHandler } from 'hono';
import { LRUCache } from 'lru-cache';
import * as z from '../zod.js';
import { ApiError } from '../errors.js';
import { sendRead, sendRendered, waitUntilOf } from '../http.js';
import type { ArchiveFeeds, FeedFormat } from '../reads/archive-feeds.js';
import type { ArchiveQuery, PublicReads } from '../reads/public-reads.js';
import { FORMATS, MEDIA_TYPES, negotiateFormat, type Format } from './archive-format.js';
import { SLUG_PATTERN, SLUG_RULE } from '../slug.js';
import { firstValue, parseOrThrow, preprocess, wholeNumber } from '../validation.js';

export interface IssuesRoutesOptions {
  reads: PublicReads;
  cacheControl: string;
  /** The largest useful offset: the archive never holds more issues than this. */
  maxOffset: number;
  /** The archive's Atom and RSS representations; without them (no SITE_ISSUE_URL) a feed request is a 404. */
  feeds?: ArchiveFeeds | undefined;
}

/** The validated archive query, with the representation asked for by name, if any. */
type ArchiveRequest = ArchiveQuery & { format?: Format | undefined };

/** The answer differs by Accept, so caches must keep the representations apart (RFC 9110 §12.5.5). */
const VARY = 'Accept';

/** Distinct archive query strings remembered with their validated form (bounded in count and bytes). */
const QUERY_MEMO_MAX_ENTRIES = 1024;
const QUERY_MEMO_MAX_BYTES = 1024 * 1024;


function createArchiveQuerySchema(maxOffset: number) {
  // Only these three are read: unknown parameters are dropped and never reach a cache key.
  return z.object({
    limit: wholeNumber(1, 100, 20, firstValue),
    offset: wholeNumber(0, maxOffset, 0, firstValue),
    category: preprocess(firstValue, z.optional(z.string().check(z.regex(SLUG_PATTERN, { error: `category ${SLUG_RULE}` })))),
    format: preprocess(firstValue, z.optional(z.enum(FORMATS, { error: `format must be one of ${FORMATS.join(', ')}` }))),
  });
}

type ArchiveQueryValidator = MiddlewareHandler<
  {},
  '/issues',
  // Typed for `hc` as the client sends it: every parameter optional (limit 20, offset 0). `format`
  // is left out: the typed client reads JSON, and a feed is not what its `json()` would promise.
  { in: { query: { limit?: string; offset?: string; category?: string } }; out: { query: ArchiveRequest } }
>;

/**
 * Validates the archive query once per distinct query string: the result depends on that
 * string alone, and parsing it with zod on every cached hit cost more than the rest of the
 * route. (Hono's `validator('query')` copies the parsed query before a memo could be asked.)
 */
function createArchiveQueryValidator(maxOffset: number): ArchiveQueryValidator {
  const schema = createArchiveQuerySchema(maxOffset);
  const memo = new LRUCache<string, Readonly<ArchiveRequest>>({
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

type FeedNegotiation = MiddlewareHandler<{}, '/issues', { out: { query: ArchiveRequest } }>;

/**
 * Answers the feed representations of the archive before the JSON handler runs; a JSON request
 * passes through. A middleware, so the handler's typed JSON answer stays what `hc` infers.
 */
function createFeedNegotiation(feeds: ArchiveFeeds | undefined, cacheControl: string): FeedNegotiation {
  return async function serveFeed(c, next) {
    const query = c.req.valid('query');
    const format = negotiateFormat(c, query.format);
    if (format === 'json') return next();
    if (!feeds) {
      throw new ApiError('NOT_FOUND', { message: 'Feeds are off: this service has no SITE_ISSUE_URL to link issues to.' });
    }
    const read = await feeds.feed(query, format satisfies FeedFormat, waitUntilOf(c));
    return sendRendered(c, read, `${MEDIA_TYPES[format]}; charset=utf-8`, cacheControl, VARY);
  };
}

/** GET /api/issues and GET /api/issues/:slug (docs/contract.md "The four public routes"). */
export function createIssuesRoutes(options: IssuesRoutesOptions) {
  const { reads, cacheControl } = options;

  return new Hono()
    .get(
      '/issues',
      createArchiveQueryValidator(options.maxOffset),
      createFeedNegotiation(options.feeds, cacheControl),
      async function listIssues(c) {
        const read = await reads.archivePage(c.req.valid('query'), waitUntilOf(c));
        return sendRead(c, read, cacheControl, VARY);
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
