import type { MiddlewareHandler } from 'hono';
import { maskEmailsInPath, type Logger, type RequestFields } from './log.js';
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

/**
 * The one access-log function: one structured line per request (method, path, status, ms,
 * cache state, request id) and its request metric, called by the general pipeline's middleware
 * and by Node's fresh-read path alike, so every answered request is logged and counted the same way.
 */
export type AccessLog = (entry: AccessEntry) => void;

/** @param routes the route templates a metric may name; any other request counts as `other`. */
export function createAccessLog(log: Logger, metrics: Metrics, routes: readonly string[]): AccessLog {
  const known = new Set(routes);
  return function logAccess(entry) {
    const ms = performance.now() - entry.startedAt;
    // A route template or `other`: never the raw path, so the label stays a closed set.
    metrics.request(entry.route !== undefined && known.has(entry.route) ? entry.route : 'other', entry.method, entry.status, ms / 1000);
    const fields: RequestFields = {
      method: entry.method,
      path: maskEmailsInPath(entry.path.slice(0, MAX_LOGGED_PATH)),
      status: entry.status,
      ms: Math.round(ms * 10) / 10,
      cache: entry.cache,
      requestId: entry.requestId,
    };
    if (log.request) log.request(fields);
    else log.log('info', 'request', { ...fields });
  };
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
