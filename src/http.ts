import type { Context, TypedResponse } from 'hono';
import type { CacheState, WaitUntil } from './reads/read-through-cache.js';
import type { PublicRead } from './reads/public-reads.js';
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

/**
 * Sends a cached read: its serialized body, strong ETag, `X-Cache` (and `Age` when stale), or 304 when the
 * client's `If-None-Match` already names that ETag (RFC 9110 §13.1.2).
 */
export function sendRead<T>(c: Context, read: PublicRead<T>, cacheControl: string, vary?: string): JsonResponse<T> | NotModified {
  return sendRendered(c, read, 'application/json', cacheControl, vary) as JsonResponse<T> | NotModified;
}

/**
 * `sendRead` for any rendered body of the given `Content-Type` (a feed's XML). `vary` names the
 * request headers a negotiated answer depends on, added to any `Vary` the response has already.
 */
export function sendRendered(c: Context, read: PublicRead, contentType: string, cacheControl: string, vary?: string): Response {
  const { body, etag } = read.rendered;
  c.set('cacheState', read.state);
  const headers: Record<string, string> = { 'Cache-Control': cacheControl, ETag: etag, 'X-Cache': read.state };
  if (read.ageSeconds !== undefined) headers.Age = String(read.ageSeconds);
  if (vary !== undefined) {
    // A 304 carries the Vary its 200 would (RFC 9110 §15.4.5), so it is set before either.
    const already = c.get('responseHeaders')?.Vary;
    headers.Vary = already ? `${already}, ${vary}` : vary;
  }
  if (ifNoneMatchMatches(c.req.header('if-none-match'), etag)) return respond(c, null, 304, headers);
  headers['Content-Type'] = contentType;
  return respond(c, body, 200, headers);
}

/** If-None-Match uses the weak comparison: `W/"x"` matches `"x"`; `*` matches anything. */
export function ifNoneMatchMatches(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  if (header.trim() === '*') return true;
  return header.split(',').some((candidate) => candidate.trim().replace(/^W\//, '') === etag);
}

/** `Cache-Control` of public GET successes (docs/contract.md "Caching"). */
export function publicCacheControl(ttlSeconds: number, staleWhileRevalidate: number, staleIfError: number): string {
  return `public, max-age=${ttlSeconds}, stale-while-revalidate=${staleWhileRevalidate}, stale-if-error=${staleIfError}`;
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
