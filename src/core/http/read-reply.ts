import type { Context, TypedResponse } from 'hono';
import type { PublicRead } from '../reads/public-reads.js';
import type { WaitUntil } from '../reads/read-through-cache.js';
import type { EncodedCopy, RenderedJson } from '../reads/rendered-json.js';
import { chooseCopy } from './content-coding.js';
import type { RequestHeader } from './request-header.js';
import type { HeaderRules } from './response-headers.js';

/** A pre-serialized JSON response typed as the envelope `T` it holds, so `hc<AppType>` infers it. */
export type JsonResponse<T> = Response & TypedResponse<T, 200, 'json'>;
export type NotModified = Response & TypedResponse<null, 304, 'body'>;
export type ReadAnswer<T> = JsonResponse<T> | NotModified;

export interface ReadRoute {
  contentType: string;
  cacheControl: string;
  /** The request headers a negotiated answer depends on besides `Origin` and `Accept-Encoding` (the archive's `Accept`). */
  vary?: string | undefined;
}

/** The answer to one cached read of a route, with this request's headers and id. */
export type SendRead = <T>(c: Context, read: PublicRead<T>, requestId: string) => ReadAnswer<T>;

type HeaderRecord = Readonly<Record<string, string>>;

/** Records kept per copy and status: one per allowed origin and one for any other, up to this many. */
const MAX_RECORDS_PER_COPY = 16;

/**
 * The answers of one route's cached reads: the copy `Accept-Encoding` chooses, its strong ETag, `X-Cache` (and `Age`
 * when stale), or a 304 when `If-None-Match` names that ETag (RFC 9110 §13.1.2). Besides the request id, a fresh
 * copy's headers depend only on the status, the coding and the granted origin, so they are worked out once per copy.
 */
export function createReadReplies(rules: HeaderRules, route: ReadRoute, requestHeader: RequestHeader): SendRead {
  const records = { 200: new WeakMap<RenderedJson | EncodedCopy, Map<string, HeaderRecord>>(), 304: new WeakMap() };

  function recordFor(c: Context, read: PublicRead, copy: EncodedCopy | undefined, status: 200 | 304): HeaderRecord {
    const origin = requestHeader(c, 'origin');
    const granted = rules.grantedOrigin(origin) ?? '';
    const { rendered } = read;
    const reusable = read.state === 'HIT' && read.ageSeconds === undefined;
    const sent = copy ?? rendered;
    const byOrigin = reusable ? records[status].get(sent) : undefined;
    const kept = byOrigin?.get(granted);
    if (kept !== undefined) return kept;
    const record = rules.headersFor({ path: c.req.path, origin, requestId: '' });
    record['Cache-Control'] = route.cacheControl;
    record.ETag = sent.etag;
    record['X-Cache'] = read.state;
    if (read.ageSeconds !== undefined) record.Age = String(read.ageSeconds);
    // A 304 carries the Vary its 200 would (RFC 9110 §15.4.5).
    if (route.vary !== undefined || rendered.encoded)
      record.Vary = [record.Vary, route.vary, rendered.encoded && 'Accept-Encoding'].filter(Boolean).join(', ');
    if (status === 200) {
      record['Content-Type'] = route.contentType;
      if (copy !== undefined) record['Content-Encoding'] = copy.coding;
    }
    if (reusable && byOrigin === undefined) records[status].set(sent, new Map([[granted, record]]));
    else if (reusable && byOrigin!.size < MAX_RECORDS_PER_COPY) byOrigin!.set(granted, record);
    return record;
  }

  return function sendRead(c, read, requestId) {
    const { rendered } = read;
    const copy = chooseCopy(requestHeader(c, 'accept-encoding'), rendered.encoded);
    const status = ifNoneMatchMatches(requestHeader(c, 'if-none-match'), (copy ?? rendered).etag) ? 304 : 200;
    const headers = { ...recordFor(c, read, copy, status) };
    headers['X-Request-Id'] = requestId;
    // A plain header record and bytes: @hono/node-server writes such a response straight to the socket.
    return new Response(status === 304 ? null : (copy?.body ?? rendered.bytes), { status, headers }) as ReadAnswer<never>;
  } as SendRead;
}

/** If-None-Match uses the weak comparison: `W/"x"` matches `"x"`; `*` matches anything. */
export function ifNoneMatchMatches(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  if (header === etag || header.trim() === '*') return true;
  return header.split(',').some((candidate) => candidate.trim().replace(/^W\//, '') === etag);
}

/** Workers' `waitUntil`, looked up only when a load needs it: Hono's `c.executionCtx` throws on Node, dear on every request. */
export function waitUntilOf(c: Context): WaitUntil {
  return (promise) => {
    try {
      c.executionCtx.waitUntil(promise);
    } catch {
      // Node: the work simply runs.
    }
  };
}
