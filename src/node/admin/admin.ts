import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { NO_STORE } from '../../core/reads/cache-policies.js';
import { urlOf } from '../listener.js';
import { createPrometheusMetrics } from './prometheus.js';

const PROBE_WAIT_MS = 2000; // within a load balancer's usual 5 s timeout
const NO_STORE_HEADERS = { 'Cache-Control': NO_STORE };

type ListenOptions = Parameters<ReturnType<typeof createPrometheusMetrics>['watch']>[0] & {
  host: string;
  port: number;
  shedding: () => boolean;
  probe: () => Promise<unknown>;
  onListening: (url: string) => void;
};

export function createAdmin(options: { unreadyAfterSeconds: number; now?: () => number }) {
  const readiness = createReadiness({ unreadyAfterMs: options.unreadyAfterSeconds * 1000, now: options.now });
  const { registry, metrics, watch } = createPrometheusMetrics({ observeUpstream: readiness.observe });

  function listen(service: ListenOptions) {
    watch(service);
    const cacheWarm = () => service.stats().entries > 0;
    // Out of rotation an instance has no traffic to learn from: a not-ready /readyz makes one call (shared).
    let probing: Promise<unknown> | undefined;
    const forget = () => (probing = undefined);
    const probeOnce = () => (probing ??= service.probe().then(forget, forget));

    const app = new Hono()
      .get('/healthz', (c) => c.text('ok\n', 200, NO_STORE_HEADERS))
      .get('/readyz', async (c) => {
        if (!service.shedding() && !readiness.state(cacheWarm()).ready) {
          let timer: NodeJS.Timeout | undefined;
          await Promise.race([probeOnce(), new Promise((resolve) => (timer = setTimeout(resolve, PROBE_WAIT_MS)))]);
          clearTimeout(timer);
        }
        const state = readiness.state(cacheWarm(), service.shedding());
        return state.ready ? c.text('ready\n', 200, NO_STORE_HEADERS) : c.text(`not ready: ${state.reason}\n`, 503, NO_STORE_HEADERS);
      })
      .get('/metrics', async (c) => c.body(await registry.metrics(), 200, { ...NO_STORE_HEADERS, 'Content-Type': registry.contentType }))
      .notFound((c) => c.text('not found\n', 404, NO_STORE_HEADERS));

    return serve({ fetch: app.fetch, hostname: service.host, port: service.port }, (info) => service.onListening(urlOf(info)));
  }

  return { metrics, listen, drain: readiness.drain };
}

export type Admin = ReturnType<typeof createAdmin>;

const ANSWERED: ReadonlySet<string> = new Set(['ok', 'not_found', 'validation', 'refused']);
/** A 429 or a hold-off counts neither way: the cache serves meanwhile. */
const FAILED: ReadonlySet<string> = new Set(['unavailable', 'timeout', 'bad_response', 'auth', 'error']);

export function createReadiness({ unreadyAfterMs, now = Date.now }: { unreadyAfterMs: number; now?: (() => number) | undefined }) {
  let answered = false;
  let failingSince: number | undefined;
  let draining = false;
  return {
    observe(outcome: string): void {
      if (ANSWERED.has(outcome)) [answered, failingSince] = [true, undefined];
      else if (FAILED.has(outcome)) failingSince ??= now();
    },
    state(cacheWarm: boolean, shedding = false): { ready: true } | { ready: false; reason: string } {
      if (draining) return { ready: false, reason: 'shutting down' };
      if (shedding) return { ready: false, reason: 'the public listener is shedding connections (MAX_CONNECTIONS)' };
      if (!answered && !cacheWarm) return { ready: false, reason: 'the upstream has not answered yet' };
      if (failingSince !== undefined && now() - failingSince >= unreadyAfterMs) {
        return { ready: false, reason: `every upstream call has failed for ${Math.floor((now() - failingSince) / 1000)} s` };
      }
      return { ready: true };
    },
    drain(): void {
      draining = true;
    },
  };
}
