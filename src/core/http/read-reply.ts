import type { Context, TypedResponse } from 'hono';
import type { WaitUntil } from '../reads/read-through-cache.js';
import type { PublicRead } from '../reads/public-reads.js';
import type { ContentCoding, EncodedCopy, RenderedJson } from '../reads/rendered-json.js';
import { chooseCopy } from './content-coding.js';
import type { RequestHeader } from './request-header.js';
import type { HeaderRules } from './response-headers.js';

/** A pre-serialized JSON response typed as the envelope `T` it holds, so `hc<AppType>` infers it. */
export type JsonResponse<T> = Response & TypedResponse<T, 200, 'json'>;
export type NotModified = Response & TypedResponse<null, 304, 'body'>;
/** What a cached read of envelope `T` answers: the 200, or a 304 for a matching `If-None-Match`. */
export type ReadAnswer<T> = JsonResponse<T> | NotModified;

/** How a route answers its cached reads. */
export interface ReadRoute {
  contentType: string;
  cacheControl: string;
  /** The request headers a negotiated answer depends on (the archive's `Accept`), besides `Origin` and `Accept-Encoding`. */
  vary?: string | undefined;
}

/** The answer to one cached read of a route, with this request's headers and id. */
export type SendRead = <T>(c: Context, read: PublicRead<T>, requestId: string) => JsonResponse<T> | NotModified;

/** A copy's header records for one status and coding, by the origin the answer grants ('' for none). */
type RecordsByCopy = WeakMap<RenderedJson, Map<string, Readonly<Record<string, string>>>>;

/**
 * How many header records (granted origins) are kept per cached copy, status and coding: one per
 * allowed origin and one for every other, so a made-up `Origin` adds none; past this many (a long
 * list of allowed origins) a request's record is worked out afresh and not kept.
 */
const MAX_RECORDS_PER_COPY = 16;

/**
 * The answers of one route's cached reads: the body (the copy's bytes, or the compressed copy
 * `Accept-Encoding` chooses, core/http/content-coding.ts), that representation's strong ETag,
 * `X-Cache` (and `Age` when stale), or 304 when `If-None-Match` already names that ETag (RFC 9110
 * §13.1.2). Where compressed copies exist the answer depends on `Accept-Encoding`, so `Vary` says
 * so, on a 304 too.
 *
 * Besides the request id, such an answer's headers depend only on the copy, the status, the
 * coding and the origin the answer grants: for a fresh copy they are worked out once as one
 * record, kept beside the copy, and each request copies the record and puts its id in. A stale
 * copy's `Age` changes by the second: its answers are worked out each time.
 */
export function createReadReplies(rules: HeaderRules, route: ReadRoute, requestHeader: RequestHeader): SendRead {
  const recordsOf = (): Record<ContentCoding | 'identity', RecordsByCopy> => ({
    identity: new WeakMap(),
    br: new WeakMap(),
    gzip: new WeakMap(),
  });
  const records = { 200: recordsOf(), 304: recordsOf() };

  function recordFor(c: Context, read: PublicRead, copy: EncodedCopy | undefined, status: 200 | 304): Readonly<Record<string, string>> {
    const origin = requestHeader(c, 'origin');
    const granted = rules.grantedOrigin(origin) ?? '';
    const reusable = read.state === 'HIT' && read.ageSeconds === undefined;
    const byCopy = records[status][copy?.coding ?? 'identity'];
    let byOrigin = reusable ? byCopy.get(read.rendered) : undefined;
    const kept = byOrigin?.get(granted);
    if (kept !== undefined) return kept;
    // In the order the answer's headers have always had: this request's, then the read's own.
    const record = rules.headersFor({ path: c.req.path, origin, requestId: '' });
    const { rendered } = read;
    record['Cache-Control'] = route.cacheControl;
    record.ETag = copy?.etag ?? rendered.etag;
    record['X-Cache'] = read.state;
    if (read.ageSeconds !== undefined) record.Age = String(read.ageSeconds);
    // A 304 carries the Vary its 200 would (RFC 9110 §15.4.5), so it is set before either.
    if (route.vary !== undefined || rendered.encoded)
      record.Vary = [record.Vary, route.vary, rendered.encoded && 'Accept-Encoding'].filter(Boolean).join(', ');
    if (status === 200) {
      record['Content-Type'] = route.contentType;
      if (copy !== undefined) record['Content-Encoding'] = copy.coding;
    }
    if (reusable) {
      if (byOrigin === undefined) byCopy.set(read.rendered, (byOrigin = new Map()));
      if (byOrigin.size < MAX_RECORDS_PER_COPY) byOrigin.set(granted, record);
    }
    return record;
  }

  return function sendRead(c, read, requestId) {
    const { rendered } = read;
    const copy = chooseCopy(requestHeader(c, 'accept-encoding'), rendered.encoded);
    const status = ifNoneMatchMatches(requestHeader(c, 'if-none-match'), copy?.etag ?? rendered.etag) ? 304 : 200;
    const headers = { ...recordFor(c, read, copy, status) };
    headers['X-Request-Id'] = requestId;
    // A plain header record and bytes: @hono/node-server writes such a response straight to the socket.
    const body = status === 304 ? null : (copy?.body ?? rendered.bytes);
    return new Response(body, { status, headers }) as JsonResponse<never> | NotModified;
  } as SendRead;
}

/** If-None-Match uses the weak comparison: `W/"x"` matches `"x"`; `*` matches anything. */
export function ifNoneMatchMatches(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  // The usual revalidation sends back the one ETag it was given, as it was.
  if (header === etag) return true;
  if (header.trim() === '*') return true;
  return header.split(',').some((candidate) => candidate.trim().replace(/^W\//, '') === etag);
}

/**
 * Workers' `waitUntil` for this request; on Node there is no execution context and work simply
 * runs. Looked up only when a load needs it: Hono's `c.executionCtx` throws (an Error with a
 * stack) where there is none, which is dear to do on every request.
 */
export function waitUntilOf(c: Context): WaitUntil {
  return (promise) => {
    let ctx: { waitUntil(promise: Promise<unknown>): void };
    try {
      ctx = c.executionCtx;
    } catch {
      return;
    }
    ctx.waitUntil(promise);
  };
}
