import type { Context, TypedResponse } from 'hono';
import type { CacheState, WaitUntil } from '../reads/read-through-cache.js';
import type { PublicRead } from '../reads/public-reads.js';
import { chooseCopy } from './content-coding.js';
import { respond } from './response-headers.js';

declare module 'hono' {
  interface ContextVariableMap {
    /** How a cached read was answered, for the access log. */
    cacheState: CacheState;
  }
}

/** A pre-serialized JSON response typed as the envelope `T` it holds, so `hc<AppType>` infers it. */
export type JsonResponse<T> = Response & TypedResponse<T, 200, 'json'>;
type NotModified = Response & TypedResponse<null, 304, 'body'>;

/** Sends a cached read (see `readReply`) with this request's headers. */
export function sendRead<T>(c: Context, read: PublicRead<T>, cacheControl: string, vary?: string): JsonResponse<T> | NotModified {
  return sendRendered(c, read, 'application/json', cacheControl, vary) as JsonResponse<T> | NotModified;
}

/** `sendRead` for any rendered body of the given `Content-Type` (a feed's XML). */
export function sendRendered(c: Context, read: PublicRead, contentType: string, cacheControl: string, vary?: string): Response {
  c.set('cacheState', read.state);
  const reply = readReply(
    read,
    { contentType, cacheControl, vary, varyAlready: c.get('responseHeaders')?.Vary },
    c.req.header('if-none-match'),
    c.req.header('accept-encoding'),
  );
  return respond(c, reply.body, reply.status, reply.headers);
}

/** How a route answers its cached reads. */
export interface ReadReplyRules {
  contentType: string;
  cacheControl: string;
  /** The request headers a negotiated answer depends on, added to `varyAlready` (this request's own `Vary`). */
  vary?: string | undefined;
  varyAlready?: string | undefined;
}

/** What a cached read answers, besides the headers every response carries. */
export interface ReadReply {
  status: 200 | 304;
  headers: Record<string, string>;
  /** The text, a compressed copy's bytes, or null for a 304. */
  body: string | Uint8Array<ArrayBuffer> | null;
}

/**
 * A cached read's answer: its serialized body (or the compressed copy `Accept-Encoding` chooses,
 * core/http/content-coding.ts), that representation's strong ETag, `X-Cache` (and `Age` when stale), or 304
 * when the client's `If-None-Match` already names that ETag (RFC 9110 §13.1.2). Where compressed
 * copies exist the answer depends on `Accept-Encoding`, so `Vary` says so, on a 304 too. The one
 * rule for the general pipeline (sendRendered) and Node's fresh-read path.
 */
export function readReply(read: PublicRead, rules: ReadReplyRules, ifNoneMatch: string | undefined, acceptEncoding?: string): ReadReply {
  const { rendered } = read;
  const copy = chooseCopy(acceptEncoding, rendered.encoded);
  const etag = copy?.etag ?? rendered.etag;
  const headers: Record<string, string> = { 'Cache-Control': rules.cacheControl, ETag: etag, 'X-Cache': read.state };
  if (read.ageSeconds !== undefined) headers.Age = String(read.ageSeconds);
  const vary = [rules.varyAlready, rules.vary, rendered.encoded && 'Accept-Encoding'].filter(Boolean).join(', ');
  // A 304 carries the Vary its 200 would (RFC 9110 §15.4.5), so it is set before either.
  if (rules.vary !== undefined || rendered.encoded) headers.Vary = vary;
  if (ifNoneMatchMatches(ifNoneMatch, etag)) return { status: 304, headers, body: null };
  headers['Content-Type'] = rules.contentType;
  if (copy === undefined) return { status: 200, headers, body: rendered.body };
  headers['Content-Encoding'] = copy.coding;
  return { status: 200, headers, body: copy.body };
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
 * stack) where there is none, which cost 7% of a cached hit on Node when done per request.
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
