import type { MiddlewareHandler } from 'hono';
import { maskEmailsInPath, type Logger, type RepeatedRequestFields } from './log.js';
import type { Metrics } from './metrics.js';
import type { CacheState } from './reads/read-through-cache.js';

const MAX_LOGGED_PATH = 200;

/** One answered request, as every entry point knows it. */
export interface AccessEntry {
  method: string;
  /** The request path as routed (no query). */
  path: string;
  /** The matched route template (`/api/issues/:slug`), if any. */
  route: string | undefined;
  status: number;
  /** `performance.now()` when the request arrived. */
  startedAt: number;
  cache: CacheState | undefined;
  requestId: string | undefined;
}

/** What answers from one cached copy share of their access entry (all but the time and id). */
export type RepeatedAccessEntry = Omit<AccessEntry, 'startedAt' | 'requestId'>;

/**
 * The one access log: one structured line per request (method, path, status, ms, cache state,
 * request id) and its request metric, for the general pipeline's middleware and Node's
 * fresh-read path alike, so every answered request is logged and counted the same way.
 */
export interface AccessLog {
  (entry: AccessEntry): void;
  /** The same for answers alike but for their time and id, the shared part worked out once (node-hot-path.ts keeps one per cached copy). */
  repeated(entry: RepeatedAccessEntry): (startedAt: number, requestId: string | undefined) => void;
}

/** @param routes the route templates a metric may name; any other request counts as `other`. */
export function createAccessLog(log: Logger, metrics: Metrics, routes: readonly string[]): AccessLog {
  const known = new Set(routes);
  function repeated(entry: RepeatedAccessEntry) {
    // A route template or `other`: never the raw path, so the label stays a closed set.
    const route = entry.route !== undefined && known.has(entry.route) ? entry.route : 'other';
    const { method, status, cache } = entry;
    const fields: RepeatedRequestFields = { method, path: maskEmailsInPath(entry.path.slice(0, MAX_LOGGED_PATH)), status, cache };
    const writeLine =
      log.requestLine?.(fields) ??
      ((ms: number, requestId: string | undefined) => log.log('info', 'request', { method, path: fields.path, status, ms, cache, requestId }));
    return (startedAt: number, requestId: string | undefined) => {
      const ms = performance.now() - startedAt;
      metrics.request(route, method, status, ms / 1000);
      writeLine(Math.round(ms * 10) / 10, requestId);
    };
  }
  return Object.assign((entry: AccessEntry) => repeated(entry)(entry.startedAt, entry.requestId), { repeated });
}

/** The general pipeline's access log: the request as Hono routed it, logged once answered. */
export function accessLogMiddleware(logAccess: AccessLog): MiddlewareHandler {
  return async function logRequest(c, next) {
    const startedAt = performance.now();
    await next();
    logAccess({
      method: c.req.method,
      path: c.req.path,
      route: c.req.routePath,
      status: c.res.status,
      startedAt,
      cache: c.get('cacheState'),
      requestId: c.get('requestId'),
    });
  };
}
