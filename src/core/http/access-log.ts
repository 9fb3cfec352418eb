import { maskEmailsInPath, type Logger } from '../log.js';
import { noopMetrics, type Metrics } from '../metrics.js';
import type { CacheState } from '../reads/read-through-cache.js';

const MAX_LOGGED_PATH = 200;

export interface AccessEntry {
  method: string;
  path: string;
  route: string | undefined;
  status: number;
  startedAt: number;
  cache: CacheState | undefined;
  requestId: string | undefined;
  /** Counted in the metrics, not logged: the spell's lines say it once. */
  staleReason?: string | undefined;
}

export type AccessLog = ReturnType<typeof createAccessLog>;

type AccessLogOptions = { routes: readonly string[]; mode: 'all' | 'summary'; now: () => number };

export function createAccessLog(log: Logger, metrics: Metrics, { routes, mode, now }: AccessLogOptions) {
  const known = new Set(routes);
  const routeOf = (route: string | undefined) => (route !== undefined && known.has(route) ? route : 'other');
  const measured = metrics !== noopMetrics;
  const isCounted = (status: number, cache: CacheState | undefined) =>
    mode === 'summary' && cache === 'HIT' && (status === 200 || status === 304);
  const counts = new Map<string, Counted>();
  let countingSince = now();

  type Counted = { method: string; route: string; status: number; requests: number };
  function countOf(route: string, method: string, status: number): Counted {
    const key = `${route} ${method} ${status}`;
    let counted = counts.get(key);
    if (counted === undefined) counts.set(key, (counted = { method, route, status, requests: 0 }));
    return counted;
  }

  function count(counted: Counted, startedAt: number) {
    counted.requests += 1;
    if (measured) metrics.request(counted.route, counted.method, counted.status, (performance.now() - startedAt) / 1000);
  }

  function logAccess(entry: AccessEntry) {
    const route = routeOf(entry.route);
    const { method, status, cache } = entry;
    if (cache === 'STALE') metrics.staleAnswer(route, entry.staleReason ?? 'revalidating');
    if (isCounted(status, cache)) return count(countOf(route, method, status), entry.startedAt);
    const ms = performance.now() - entry.startedAt;
    metrics.request(route, method, status, ms / 1000);
    const path = maskEmailsInPath(entry.path.slice(0, MAX_LOGGED_PATH));
    log.log('info', 'request', { method, path, status, ms: Math.round(ms * 10) / 10, cache, requestId: entry.requestId });
  }

  return Object.assign(logAccess, {
    hitCounter: (route: string | undefined, method: string, status: number) =>
      isCounted(status, 'HIT') && countOf(routeOf(route), method, status),
    countHit: count,
    writeHitSummary() {
      const at = now();
      // Tenths: a summary at shutdown may follow the last one by less than a second.
      const seconds = Math.max(0, Math.round((at - countingSince) / 100) / 10);
      countingSince = at;
      for (const counted of counts.values()) {
        if (counted.requests === 0) continue;
        const { method, route, status, requests } = counted;
        log.log('info', 'cache_hits', { method, route, status, cache: 'HIT', requests, seconds });
        counted.requests = 0;
      }
    },
  });
}
