import type { Server } from 'node:net';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Metrics } from '../../core/metrics.js';
import { STALE_REASONS } from '../../core/upstream/failure-policy.js';
import { UpstreamError } from '../../core/upstream/transport.js';

type CacheFigures = Record<'entries' | 'bytes' | 'notFoundEntries' | 'notFoundBytes' | 'renderedPages' | 'renderedPageBytes', number>;

const PREFIX = 'newsletter_bff_';
const METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'POST', 'OPTIONS']);
/** Rejections worth telling apart (an unavailable verifier is `failed`). */
const TOLD_APART = ['RATE_LIMITED', 'CAPTCHA_FAILED', 'CAPTCHA_REQUIRED'];
const OUTCOMES = ['forwarded', 'deduped', 'honeypot', 'refused', 'paused', 'rejected', 'failed', 'abandoned', 'timed_out'];
const SUBSCRIBE_OUTCOMES = [...OUTCOMES, ...TOLD_APART.map((reason) => reason.toLowerCase())];
const READ_ROUTES = ['/api/issues', '/api/issues/:slug', '/api/categories'];
const REQUEST_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const UPSTREAM_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** prom-client's gauges named like counters (`promtool check metrics` refuses them). */
const MISNAMED_DEFAULTS = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];
const CACHES = {
  upstream_data: ['bytes', 'entries'],
  rendered_pages: ['renderedPageBytes', 'renderedPages'],
  not_found: ['notFoundBytes', 'notFoundEntries'],
} as const;

const HELP = {
  http_requests_total: 'Requests answered by the public listener, by route template, method and status.',
  http_request_duration_seconds: 'Time from a request reaching the app to its response, by route template and method.',
  cache_reads_total: 'Reads of the upstream-data cache, by result: hit (fresh), miss (loaded), stale (served past its TTL).',
  stale_answers_total: 'Requests answered with a stale copy, by route template and reason: revalidating, or the failure spell under way.',
  cache_evictions_total: 'Entries the upstream-data cache dropped on its own: size (over CACHE_MAX_BYTES).',
  upstream_calls_total: 'Calls of the upstream API (retries included), by operation and outcome.',
  upstream_call_duration_seconds: 'Time an upstream call took, retries included, by operation and outcome.',
  upstream_retries_total: 'Upstream attempts that failed and were retried.',
  upstream_hold_off_seconds_total: 'Seconds of hold-off that upstream 429 answers imposed, during which no call went out.',
  subscribe_attempts_total: 'Subscribe attempts, by outcome.',
  subscribe_surge: 'Whether a subscribe surge is on (1): every subscribe is challenged, or new addresses are paused.',
  subscribe_surges_total: 'Subscribe surges started: attempts above SUBSCRIBE_SURGE_PER_MINUTE.',
  connections_shed_total: 'Connections the public listener closed to make room near MAX_CONNECTIONS, by reason.',
  open_connections: 'Open connections to the public listener.',
  cache_bytes: 'Approximate bytes held by each in-memory cache (together bounded by CACHE_MAX_BYTES).',
  cache_entries: 'Entries held by each in-memory cache.',
  redis_up: 'Whether Redis (REDIS_URL) answers: 0 while this instance serves from memory instead.',
};

const each = (label: string, values: readonly string[]) => values.map((value) => ({ [label]: value }));

export function createPrometheusMetrics({ observeUpstream = (_outcome: string) => {} } = {}) {
  const registry = new Registry();
  const registers = [registry];
  collectDefaultMetrics({ register: registry });
  for (const name of MISNAMED_DEFAULTS) registry.removeSingleMetric(name);

  const common = (name: keyof typeof HELP, labelNames: string[]) => ({ name: PREFIX + name, help: HELP[name], labelNames, registers });
  // Counted from zero (`zeroes`): a series that appears only with its first event breaks rate() and alerts.
  const counter = (name: keyof typeof HELP, labelNames: string[] = [], zeroes: Record<string, string>[] = []) => {
    const metric = new Counter(common(name, labelNames));
    for (const labels of zeroes) metric.inc(labels, 0);
    return metric;
  };
  const histogram = (name: keyof typeof HELP, labelNames: string[], buckets: number[]) =>
    new Histogram({ ...common(name, labelNames), buckets });
  const gauge = (name: keyof typeof HELP, labelNames: string[] = [], collect?: (this: Gauge) => void) =>
    new Gauge({ ...common(name, labelNames), ...(collect && { collect }) });

  const requests = counter('http_requests_total', ['route', 'method', 'status']);
  const requestSeconds = histogram('http_request_duration_seconds', ['route', 'method'], REQUEST_BUCKETS);
  const cacheReads = counter('cache_reads_total', ['result'], each('result', ['hit', 'miss', 'stale']));
  const staleZeroes = READ_ROUTES.flatMap((route) => STALE_REASONS.map((reason) => ({ route, reason })));
  const staleAnswers = counter('stale_answers_total', ['route', 'reason'], staleZeroes);
  const evictions = counter('cache_evictions_total', ['reason'], each('reason', ['size']));
  const upstreamCalls = counter('upstream_calls_total', ['operation', 'outcome']);
  const upstreamSeconds = histogram('upstream_call_duration_seconds', ['operation', 'outcome'], UPSTREAM_BUCKETS);
  const retries = counter('upstream_retries_total');
  const holdOff = counter('upstream_hold_off_seconds_total');
  const subscribes = counter('subscribe_attempts_total', ['outcome'], each('outcome', SUBSCRIBE_OUTCOMES));
  const surge = gauge('subscribe_surge');
  const surges = counter('subscribe_surges_total');
  const shed = counter('connections_shed_total', ['reason'], each('reason', ['idle', 'slow_head', 'over_share']));

  const metrics: Metrics = {
    request(route, method, status, seconds) {
      const methodLabel = METHODS.has(method) ? method : 'other';
      requests.inc({ route, method: methodLabel, status: String(status) });
      requestSeconds.observe({ route, method: methodLabel }, seconds);
    },
    cacheRead: (state) => cacheReads.inc({ result: state.toLowerCase() }),
    staleAnswer: (route, reason) => staleAnswers.inc({ route, reason }),
    cacheEviction: () => evictions.inc({ reason: 'size' }),
    upstreamCall(operation, seconds, error) {
      const outcome = upstreamOutcome(error);
      upstreamCalls.inc({ operation, outcome });
      observeUpstream(outcome);
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
    watch(service: { stats: () => CacheFigures; redisHealthy?: () => boolean; publicServer: Pick<Server, 'on'> }): void {
      // Registered in the order a scrape has always listed them.
      const connections = gauge('open_connections');
      service.publicServer.on('connection', (socket: { once(event: 'close', listener: () => void): unknown }) => {
        connections.inc();
        socket.once('close', () => connections.dec());
      });
      for (const [name, field] of [['cache_bytes', 0] as const, ['cache_entries', 1] as const]) {
        gauge(name, ['cache'], function collect() {
          const stats = service.stats();
          for (const [cache, fields] of Object.entries(CACHES)) this.set({ cache }, stats[fields[field]]);
        });
      }
      const { redisHealthy } = service;
      if (redisHealthy) {
        gauge('redis_up', [], function collect() {
          this.set(redisHealthy() ? 1 : 0);
        });
      }
    },
  };
}

export function subscribeOutcome(outcome: string, reason: string | undefined): string {
  if (outcome === 'rejected' && reason !== undefined && TOLD_APART.includes(reason)) return reason.toLowerCase();
  if (outcome === 'refused_by_upstream') return 'refused';
  return SUBSCRIBE_OUTCOMES.includes(outcome) ? outcome : 'other';
}

export function upstreamOutcome(error: unknown): string {
  if (error === undefined) return 'ok';
  if (!(error instanceof UpstreamError)) return 'error';
  if (error.kind === 'rate_limited' && error.status === undefined) return 'held_off';
  return error.kind;
}
