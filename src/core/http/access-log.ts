import { maskEmailsInPath, type Logger } from '../log.js';
import { noopMetrics, type Metrics } from '../metrics.js';
import type { CacheState } from '../reads/read-through-cache.js';

const MAX_LOGGED_PATH = 200;

/** One answered request. */
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

/**
 * ACCESS_LOG: `all` writes a `request` line for every request; `summary` writes one for every
 * request but the fresh cached hits (`X-Cache: HIT`, 200 or 304), which are counted instead and
 * written as `cache_hits` lines, one per route and status (a closed set), by `writeHitSummary`
 * (docs/configuration.md "Logs" says why that is the default).
 */
export type AccessLogMode = 'all' | 'summary';

/**
 * The access log: a structured `request` line per request (method, path, status, ms, cache
 * state, request id) and its request metric; with ACCESS_LOG=summary, fresh cached hits are
 * counted into `cache_hits` lines instead (each still in the metric).
 */
export interface AccessLog {
  (entry: AccessEntry): void;
  /**
   * The count of fresh hits of one route, method and status when ACCESS_LOG=summary counts them
   * (undefined otherwise: each has its line): what `logAccess` does for such an entry, for a
   * caller that answers many alike and keeps it. Called with the request's `startedAt`.
   */
  hitCounter(route: string | undefined, method: string, status: number): ((startedAt: number) => void) | undefined;
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
  cache: CacheState;
  requests: number;
}

export function createAccessLog(log: Logger, metrics: Metrics, options: AccessLogOptions): AccessLog {
  const { mode = 'all', now = Date.now } = options;
  const known = new Set(options.routes);
  // A route template or `other`: never the raw path, so a label or a summary stays a closed set.
  const routeOf = (route: string | undefined) => (route !== undefined && known.has(route) ? route : 'other');
  const measured = metrics !== noopMetrics;
  const summary = mode === 'summary';
  const isCounted = (status: number, cache: CacheState | undefined) => summary && cache === 'HIT' && (status === 200 || status === 304);

  /** Every count, in the order each was first made (the summary's lines); found by route, method and status. */
  const counts: HitCount[] = [];
  const countsByRoute = new Map<string, Map<string, Map<number, HitCount>>>();
  let countingSince = now();

  function countOf(route: string, method: string, status: number): HitCount {
    let byMethod = countsByRoute.get(route);
    if (byMethod === undefined) countsByRoute.set(route, (byMethod = new Map()));
    let byStatus = byMethod.get(method);
    if (byStatus === undefined) byMethod.set(method, (byStatus = new Map()));
    let counted = byStatus.get(status);
    if (counted === undefined) {
      byStatus.set(status, (counted = { method, route, status, cache: 'HIT', requests: 0 }));
      counts.push(counted);
    }
    return counted;
  }

  function hitCounter(givenRoute: string | undefined, method: string, status: number) {
    if (!isCounted(status, 'HIT')) return undefined;
    const route = routeOf(givenRoute);
    const counted = countOf(route, method, status);
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

  return Object.assign(
    function logAccess(entry: AccessEntry) {
      const route = routeOf(entry.route);
      const { method, status, cache } = entry;
      if (cache === 'STALE') metrics.staleAnswer(route, entry.staleReason ?? 'revalidating');
      if (isCounted(status, cache)) {
        countOf(route, method, status).requests += 1;
        if (measured) metrics.request(route, method, status, (performance.now() - entry.startedAt) / 1000);
        return;
      }
      const ms = performance.now() - entry.startedAt;
      metrics.request(route, method, status, ms / 1000);
      const path = maskEmailsInPath(entry.path.slice(0, MAX_LOGGED_PATH));
      log.log('info', 'request', { method, path, status, ms: Math.round(ms * 10) / 10, cache, requestId: entry.requestId });
    },
    {
      hitCounter,
      writeHitSummary() {
        const at = now();
        // Tenths: a summary at shutdown may follow the last one by less than a second.
        const seconds = Math.max(0, Math.round((at - countingSince) / 100) / 10);
        countingSince = at;
        for (const counted of counts) {
          if (counted.requests === 0) continue;
          const { method, route, status, cache, requests } = counted;
          log.log('info', 'cache_hits', { method, route, status, cache, requests, seconds });
          counted.requests = 0;
        }
      },
    },
  );
}
