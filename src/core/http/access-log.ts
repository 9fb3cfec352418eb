import type { MiddlewareHandler } from 'hono';
import { maskEmailsInPath, type Logger } from '../log.js';
import { noopMetrics, type Metrics } from '../metrics.js';
import type { CacheState } from '../reads/read-through-cache.js';

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
  /** Why a STALE answer was stale (counted in the metrics, not logged: the spell's lines say it once). */
  staleReason?: string | undefined;
}

/** What answers from one cached copy share of their access entry (all but the time and id). */
export type FreshHitEntry = Omit<AccessEntry, 'startedAt' | 'requestId' | 'staleReason'>;

/**
 * ACCESS_LOG: `all` writes a `request` line for every request; `summary` writes one for every
 * request but the fresh cached hits Node's fast path answers, which are counted instead and
 * written as `cache_hits` lines, one per route and status (a closed set), by `writeHitSummary`
 * (docs/configuration.md "Logs" says why that is the default).
 */
export type AccessLogMode = 'all' | 'summary';

/**
 * The one access log: a structured `request` line per request (method, path, status, ms, cache
 * state, request id) and its request metric, for the general pipeline's middleware and Node's
 * fresh-read path alike, so every answered request is logged and counted the same way; with
 * ACCESS_LOG=summary, the fast path's fresh hits are counted into `cache_hits` lines instead
 * (each still in the metric).
 */
export interface AccessLog {
  (entry: AccessEntry): void;
  /**
   * The log of fresh hits answered alike but for their time and id (node/hot-path.ts keeps one
   * per cached copy): a line each, or a count in the summary.
   */
  freshHit(entry: FreshHitEntry): (startedAt: number, requestId: string | undefined) => void;
  /** Whether `freshHit`'s logs read `startedAt`: a line or a metric times the request; a count alone does not. */
  readonly freshHitsTimed: boolean;
  /** Writes the `cache_hits` lines of what was counted since the last call, and starts counting afresh. */
  writeHitSummary(): void;
}

export interface AccessLogOptions {
  /** The route templates a metric or summary may name; any other request counts as `other`. */
  routes: readonly string[];
  mode?: AccessLogMode;
  now?: () => number;
}

/** Fresh hits of one method, route, status and cache state, counted since the last summary. */
interface HitCount {
  method: string;
  route: string;
  status: number;
  cache: CacheState | undefined;
  requests: number;
}

export function createAccessLog(log: Logger, metrics: Metrics, options: AccessLogOptions): AccessLog {
  const { mode = 'all', now = Date.now } = options;
  const known = new Set(options.routes);
  // A route template or `other`: never the raw path, so a label or a summary stays a closed set.
  const routeOf = (route: string | undefined) => (route !== undefined && known.has(route) ? route : 'other');

  function lineFor(entry: FreshHitEntry) {
    const route = routeOf(entry.route);
    const { method, status, cache } = entry;
    const path = maskEmailsInPath(entry.path.slice(0, MAX_LOGGED_PATH));
    return (startedAt: number, requestId: string | undefined) => {
      const ms = performance.now() - startedAt;
      metrics.request(route, method, status, ms / 1000);
      log.log('info', 'request', { method, path, status, ms: Math.round(ms * 10) / 10, cache, requestId });
    };
  }

  const counts = new Map<string, HitCount>();
  let countingSince = now();
  const measured = metrics !== noopMetrics;

  function countFor(entry: FreshHitEntry) {
    const route = routeOf(entry.route);
    const { method, status, cache } = entry;
    const key = `${method} ${route} ${status} ${cache}`;
    let count = counts.get(key);
    if (count === undefined) counts.set(key, (count = { method, route, status, cache, requests: 0 }));
    const counted = count;
    if (!measured) {
      return () => {
        counted.requests += 1;
      };
    }
    return (startedAt: number) => {
      counted.requests += 1;
      metrics.request(route, method, status, (performance.now() - startedAt) / 1000);
    };
  }

  function logRequest(entry: AccessEntry): void {
    if (entry.cache === 'STALE') metrics.staleAnswer(routeOf(entry.route), entry.staleReason ?? 'revalidating');
    lineFor(entry)(entry.startedAt, entry.requestId);
  }

  return Object.assign(logRequest, {
    freshHit: mode === 'summary' ? countFor : lineFor,
    freshHitsTimed: mode === 'all' || measured,
    writeHitSummary() {
      const at = now();
      // Tenths: a summary at shutdown may follow the last one by less than a second.
      const seconds = Math.max(0, Math.round((at - countingSince) / 100) / 10);
      countingSince = at;
      for (const count of counts.values()) {
        if (count.requests === 0) continue;
        const { method, route, status, cache, requests } = count;
        log.log('info', 'cache_hits', { method, route, status, cache, requests, seconds });
        count.requests = 0;
      }
    },
  });
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
      staleReason: c.get('staleReason'),
    });
  };
}
