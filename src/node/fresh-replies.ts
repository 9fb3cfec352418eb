import { ifNoneMatchMatches, readReply } from '../core/http/read-reply.js';
import { chooseCopy } from '../core/http/content-coding.js';
import type { PublicRead, PublicReads, RenderedJson } from '../core/reads/public-reads.js';
import type { EncodedCopy } from '../core/reads/rendered-json.js';
import type { CacheState } from '../core/reads/read-through-cache.js';
import type { HeaderRules } from '../core/http/response-headers.js';
import { ARCHIVE_VARY, type ArchiveQueries } from '../core/routes/archive-query.js';
import { SLUG_PATTERN } from '../core/slug.js';

/** A request as it arrived, before any routing. */
export interface FreshRequest {
  method: string;
  /** The request target as sent: path and query (`/api/issues?limit=5`). */
  target: string;
  origin: string | undefined;
  requestId: string | undefined;
  ifNoneMatch: string | undefined;
  accept: string | undefined;
  acceptEncoding: string | undefined;
}

/** The whole answer to a fresh read: what the general pipeline would answer, byte for byte. */
export interface FreshReply {
  status: 200 | 304;
  /**
   * Its headers in the general pipeline's order, with `X-Request-Id` left empty: worked out
   * once per cached copy, `Origin` and status, and the same object for every such request.
   */
  headers: Readonly<Record<string, string>>;
  /** This request's id, the one header that differs from request to request. */
  requestId: string;
  /** The body to send (the cached read's JSON, or its compressed copy), or `undefined` for a 304. */
  body: string | Uint8Array<ArrayBuffer> | undefined;
  /** The routed path, its route template and the read's cache state, for the access log. */
  path: string;
  route: string;
  cache: CacheState;
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

  /**
   * The header records already worked out for a cached copy, by status and content coding, then
   * by the origin the answer grants ('' for a foreign or absent `Origin`): at most allowed
   * origins + 1 per copy, status and coding, never keyed by what a client made up. Past
   * MAX_HEADER_RECORDS_PER_COPY (a long list of allowed origins), a request's record is worked out
   * afresh and not kept.
   */
  const headerRecords = { 200: headerRecordsByCoding(), 304: headerRecordsByCoding() };

  function headersFor(
    route: string,
    path: string,
    read: PublicRead,
    request: FreshRequest,
    copy: EncodedCopy | undefined,
    notModified: boolean,
  ): Record<string, string> {
    // A fresh copy is a HIT without `Age`: then its headers depend on nothing else of the request.
    const reusable = read.state === 'HIT' && read.ageSeconds === undefined;
    const byCopy = headerRecords[notModified ? 304 : 200][copy?.coding ?? 'identity'];
    let byOrigin = reusable ? byCopy.get(read.rendered) : undefined;
    const grantedOrigin = headerRules.grantedOrigin(request.origin) ?? '';
    const keptRecord = byOrigin?.get(grantedOrigin);
    if (keptRecord !== undefined) return keptRecord;
    const headers = headerRules.headersFor({ path, origin: request.origin, requestId: '' });
    const reply = readReply(
      read,
      { contentType: 'application/json', cacheControl, vary: route === ISSUES ? ARCHIVE_VARY : undefined, varyAlready: headers.Vary },
      request.ifNoneMatch,
      request.acceptEncoding,
    );
    // In the order `respond` puts them: this request's headers, then the read's own.
    const record = Object.assign(headers, reply.headers);
    if (reusable) {
      if (byOrigin === undefined) byCopy.set(read.rendered, (byOrigin = new Map()));
      if (byOrigin.size < MAX_HEADER_RECORDS_PER_COPY) byOrigin.set(grantedOrigin, record);
    }
    return record;
  }

  return function freshReply(request) {
    const { method, target } = request;
    // HEAD is left to the general pipeline: Hono answers it by rebuilding the GET's response
    // (lower-case header names, no Content-Length), which this path would have to imitate.
    if (method !== 'GET') return undefined;
    const queryAt = target.indexOf('?');
    const path = queryAt === -1 ? target : target.slice(0, queryAt);
    const search = queryAt === -1 ? '' : target.slice(queryAt + 1);
    if (search.includes('format') || (request.accept !== undefined && FEED_MEDIA_TYPE.test(request.accept))) return undefined;
    const route = routeOf(path);
    const read = route === undefined ? undefined : freshRead(route, path, search);
    if (route === undefined || read === undefined) return undefined;
    // As readReply chooses: the copy Accept-Encoding asks for, and its own ETag.
    const copy = chooseCopy(request.acceptEncoding, read.rendered.encoded);
    const notModified = ifNoneMatchMatches(request.ifNoneMatch, copy?.etag ?? read.rendered.etag);
    return {
      status: notModified ? 304 : 200,
      headers: headersFor(route, path, read, request, copy, notModified),
      requestId: headerRules.requestId(request.requestId),
      body: notModified ? undefined : (copy?.body ?? read.rendered.body),
      path,
      route,
      cache: read.state,
    };
  };
}

function headerRecordsByCoding() {
  const byCopy = () => new WeakMap<RenderedJson, Map<string, Record<string, string>>>();
  return { identity: byCopy(), br: byCopy(), gzip: byCopy() };
}

/** How many header records (granted origins) are kept per cached copy, status and coding. */
const MAX_HEADER_RECORDS_PER_COPY = 16;
