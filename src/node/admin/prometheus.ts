import type { Server } from 'node:net';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { ConnectionShedReason, Metrics } from '../../core/metrics.js';
import { STALE_REASONS } from '../../core/upstream/failure-policy.js';
import { upstreamOutcome } from './readiness.js';

/** As `createApp`'s `stats()` gives them. */
export type CacheFigures = Record<
  'entries' | 'bytes' | 'notFoundEntries' | 'notFoundBytes' | 'renderedPages' | 'renderedPageBytes',
  number
>;

const PREFIX = 'newsletter_bff_';
const METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'POST', 'OPTIONS']);
/** Every subscribe outcome, counted from zero. */
const SUBSCRIBE_OUTCOMES = [
  'forwarded',
  'deduped',
  'honeypot',
  'rate_limited',
  'refused',
  'captcha_required',
  'captcha_failed',
  'paused',
  'rejected',
  'failed',
  'abandoned',
  'timed_out',
] as const;
const EVICTION_REASONS = { evict: 'size', expire: 'ttl' } as const;
const SHED_REASONS: readonly ConnectionShedReason[] = ['idle', 'slow_head', 'over_share'];
const READ_ROUTES = ['/api/issues', '/api/issues/:slug', '/api/categories'] as const;
/** prom-client's gauges named like counters (`promtool check metrics` refuses them). */
const MISNAMED_DEFAULTS = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

/** `Metrics` for Prometheus (Node only), named by its conventions. */
export function createPrometheusMetrics({ defaultMetrics = true } = {}) {
  const registry = new Registry();
  const registers = [registry];
  if (defaultMetrics) {
    collectDefaultMetrics({ register: registry });
    for (const name of MISNAMED_DEFAULTS) registry.removeSingleMetric(name);
  }

  const counter = (name: string, help: string, labelNames: string[] = []) =>
    new Counter({ name: PREFIX + name, help, labelNames, registers });
  const histogram = (name: string, help: string, labelNames: string[], buckets: number[]) =>
    new Histogram({ name: PREFIX + name, help, labelNames, buckets, registers });

  const requests = counter('http_requests_total', 'Requests answered by the public listener, by route template, method and status.', [
    'route',
    'method',
    'status',
  ]);
  const requestSeconds = histogram(
    'http_request_duration_seconds',
    'Time from a request reaching the app to its response, by route template and method.',
    ['route', 'method'],
    [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  );
  const cacheReads = counter(
    'cache_reads_total',
    'Reads of the upstream-data cache, by result: hit (fresh), miss (loaded), stale (served past its TTL).',
    ['result'],
  );
  const staleAnswers = counter(
    'stale_answers_total',
    'Requests answered with a stale copy, by route template and reason: revalidating (a refresh under way), or the failure spell under way (upstream_5xx, unreachable, timeout, rate_limited, key_refused, path_missing, bad_response, refused, backing_off).',
    ['route', 'reason'],
  );
  const evictions = counter(
    'cache_evictions_total',
    'Entries the upstream-data cache dropped on its own: size (over CACHE_MAX_BYTES) or ttl (expired).',
    ['reason'],
  );
  const upstreamCalls = counter('upstream_calls_total', 'Calls of the upstream API (retries included), by operation and outcome.', [
    'operation',
    'outcome',
  ]);
  const upstreamSeconds = histogram(
    'upstream_call_duration_seconds',
    'Time an upstream call took, retries included, by operation and outcome.',
    ['operation', 'outcome'],
    [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
  );
  const retries = counter('upstream_retries_total', 'Upstream attempts that failed and were retried.');
  const holdOff = counter(
    'upstream_hold_off_seconds_total',
    'Seconds of hold-off that upstream 429 answers imposed, during which no call went out.',
  );
  const subscribes = counter('subscribe_attempts_total', 'Subscribe attempts, by outcome.', ['outcome']);
  const surge = new Gauge({
    name: `${PREFIX}subscribe_surge`,
    help: 'Whether a subscribe surge is on (1): every subscribe is challenged, or new addresses are paused (docs/subscribe.md).',
    registers,
  });
  const surges = counter('subscribe_surges_total', 'Subscribe surges started: attempts above SUBSCRIBE_SURGE_PER_MINUTE.');
  surge.set(0);
  const shed = counter(
    'connections_shed_total',
    'Connections the public listener closed to make room near MAX_CONNECTIONS, by reason: idle (kept alive, no request in flight), slow_head (no whole request head within the grace), over_share (an address holding more than its share).',
    ['reason'],
  );
  const connections = new Gauge({ name: `${PREFIX}open_connections`, help: 'Open connections to the public listener.', registers });
  let cacheStats: (() => CacheFigures) | undefined;
  const cacheGauge = (name: string, help: string, fields: Record<string, keyof CacheFigures>) =>
    new Gauge({
      name: PREFIX + name,
      help,
      labelNames: ['cache'],
      registers,
      collect() {
        const stats = cacheStats?.();
        if (stats) for (const [cache, field] of Object.entries(fields)) this.set({ cache }, stats[field]);
      },
    });
  cacheGauge('cache_bytes', 'Approximate bytes held by each in-memory cache (together bounded by CACHE_MAX_BYTES).', {
    upstream_data: 'bytes',
    rendered_pages: 'renderedPageBytes',
    not_found: 'notFoundBytes',
  });
  cacheGauge('cache_entries', 'Entries held by each in-memory cache.', {
    upstream_data: 'entries',
    rendered_pages: 'renderedPages',
    not_found: 'notFoundEntries',
  });

  // Counted from zero: a series that appears only with its first event breaks rate() and alerts.
  for (const result of ['hit', 'miss', 'stale']) cacheReads.inc({ result }, 0);
  for (const route of READ_ROUTES) for (const reason of STALE_REASONS) staleAnswers.inc({ route, reason }, 0);
  for (const reason of Object.values(EVICTION_REASONS)) evictions.inc({ reason }, 0);
  for (const outcome of SUBSCRIBE_OUTCOMES) subscribes.inc({ outcome }, 0);
  for (const reason of SHED_REASONS) shed.inc({ reason }, 0);

  const metrics: Metrics = {
    request(route, method, status, seconds) {
      const methodLabel = METHODS.has(method) ? method : 'other';
      requests.inc({ route, method: methodLabel, status: String(status) });
      requestSeconds.observe({ route, method: methodLabel }, seconds);
    },
    cacheRead: (state) => cacheReads.inc({ result: state.toLowerCase() }),
    staleAnswer: (route, reason) => staleAnswers.inc({ route, reason }),
    cacheEviction: (reason) => evictions.inc({ reason: EVICTION_REASONS[reason] }),
    upstreamCall(operation, seconds, error) {
      const outcome = upstreamOutcome(error);
      upstreamCalls.inc({ operation, outcome });
      if (outcome !== 'held_off') upstreamSeconds.observe({ operation, outcome }, seconds);
    },
    upstreamRetry: () => retries.inc(),
    upstreamHoldOff: (seconds) => holdOff.inc(seconds),
    subscribe: (outcome, reason) => subscribes.inc({ outcome: subscribeOutcome(outcome, reason) }),
    subscribeSurge(active) {
      surge.set(active ? 1 : 0);
      if (active) surges.inc();
    },
    connectionShed: (reason) => shed.inc({ reason }),
  };

  return {
    registry,
    metrics,
    watchCaches(stats: () => CacheFigures): void {
      cacheStats = stats;
    },
    watchRedis(healthy: () => boolean): void {
      new Gauge({
        name: `${PREFIX}redis_up`,
        help: 'Whether Redis (REDIS_URL) answers: 0 while this instance serves from memory instead.',
        registers,
        collect() {
          this.set(healthy() ? 1 : 0);
        },
      });
    },
    trackConnections(server: Pick<Server, 'on'>): void {
      server.on('connection', (socket: { once(event: 'close', listener: () => void): unknown }) => {
        connections.inc();
        socket.once('close', () => connections.dec());
      });
    },
  };
}

/** The rate limit and the challenge are rejections worth telling apart (an unavailable verifier is `failed`). */
const TOLD_APART: readonly (string | undefined)[] = ['RATE_LIMITED', 'CAPTCHA_FAILED', 'CAPTCHA_REQUIRED'];

export function subscribeOutcome(outcome: string, reason: string | undefined): string {
  if (outcome === 'rejected' && TOLD_APART.includes(reason)) return reason!.toLowerCase();
  if (outcome === 'refused_by_upstream') return 'refused';
  return (SUBSCRIBE_OUTCOMES as readonly string[]).includes(outcome) ? outcome : 'other';
}
