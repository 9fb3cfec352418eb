import { readReply } from './http.js';
import type { PublicRead, PublicReads, RenderedJson } from './reads/public-reads.js';
import type { CacheState } from './reads/read-through-cache.js';
import type { HeaderRules } from './response-headers.js';
import { ARCHIVE_VARY, type ArchiveQueries } from './routes/archive-query.js';
import { SLUG_PATTERN } from './slug.js';

/** A request as it arrived, before any routing. */
export interface FreshRequest {
  method: string;
  /** The request target as sent: path and query (`/api/issues?limit=5`). */
  target: string;
  origin: string | undefined;
  requestId: string | undefined;
  ifNoneMatch: string | undefined;
  accept: string | undefined;
}

/** The whole answer to a fresh read: what the general pipeline would answer, byte for byte. */
export interface FreshReply {
  status: 200 | 304;
  headers: Record<string, string>;
  /** The cached read; its body is sent unless `withBody` is false (a 304). */
  rendered: RenderedJson;
  withBody: boolean;
  /** The routed path, its route template and the read's cache state, for the access log. */
  path: string;
  route: string;
  cache: CacheState;
  requestId: string;
}

export interface FreshRepliesOptions {
  reads: PublicReads;
  archiveQueries: ArchiveQueries;
  headerRules: HeaderRules;
  cacheControl: string;
}

const ISSUES = '/api/issues';
const ISSUE_PREFIX = '/api/issues/';
const ISSUE_ROUTE = '/api/issues/:slug';
const CATEGORIES = '/api/categories';
/** Feeds are negotiated on GET /api/issues by `?format=` or `Accept`: the general pipeline decides. */
const FEED_MEDIA_TYPE = /atom|rss/i;

/**
 * Answers a GET of the three read routes at once when its answer is a fresh cached
 * copy, with the rules the general pipeline uses (query memo, header rules, `readReply`); for
 * anything else — a miss, stale or unknown entry, a query never validated, a feed, a path that
 * is not exactly one of ours — it returns `undefined` and the general pipeline answers.
 */
export function createFreshReplies(options: FreshRepliesOptions): (request: FreshRequest) => FreshReply | undefined {
  const { reads, archiveQueries, headerRules, cacheControl } = options;

  /** The route template of `path` when it is exactly one of the three, as Hono would match it. */
  function routeOf(path: string): string | undefined {
    if (path === ISSUES || path === CATEGORIES) return path;
    // The pattern admits no `%`, `/` or `.`: such a path is the one Hono routes, undecoded.
    return path.startsWith(ISSUE_PREFIX) && SLUG_PATTERN.test(path.slice(ISSUE_PREFIX.length)) ? ISSUE_ROUTE : undefined;
  }

  function freshRead(route: string, path: string, search: string): PublicRead | undefined {
    if (route === ISSUES) {
      const query = archiveQueries.remembered(search);
      return query && query.format === undefined ? reads.fresh.archivePage(query) : undefined;
    }
    return route === CATEGORIES ? reads.fresh.categories() : reads.fresh.issue(path.slice(ISSUE_PREFIX.length));
  }

  return function freshReply(request) {
    const { method, target } = request;
    // HEAD is left to the general pipeline: Hono answers it by rebuilding the GET's response
    // (lower-case header names, no Content-Length), which this path would have to imitate.
    if (method !== 'GET') return undefined;
    const at = target.indexOf('?');
    const path = at === -1 ? target : target.slice(0, at);
    const search = at === -1 ? '' : target.slice(at + 1);
    if (search.includes('format') || (request.accept !== undefined && FEED_MEDIA_TYPE.test(request.accept))) return undefined;
    const route = routeOf(path);
    const read = route === undefined ? undefined : freshRead(route, path, search);
    if (route === undefined || read === undefined) return undefined;
    const requestId = headerRules.requestId(request.requestId);
    const headers = headerRules.headersFor({ path, origin: request.origin, requestId });
    const reply = readReply(
      read,
      { contentType: 'application/json', cacheControl, vary: route === ISSUES ? ARCHIVE_VARY : undefined, varyAlready: headers.Vary },
      request.ifNoneMatch,
    );
    // In the order `respond` puts them: this request's headers, then the read's own.
    Object.assign(headers, reply.headers);
    return { status: reply.status, headers, rendered: read.rendered, withBody: reply.body !== null, path, route, cache: read.state, requestId };
  };
}
