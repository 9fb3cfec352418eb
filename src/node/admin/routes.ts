import { Hono } from 'hono';
import type { Registry } from 'prom-client';
import type { Readiness } from './readiness.js';
import { NO_STORE } from '../../core/reads/cache-policies.js';

export interface AdminAppOptions {
  registry: Registry;
  readiness: Readiness;
  /** Whether the cache holds anything the service could serve. */
  cacheWarm: () => boolean;
  /** Whether the public listener is shedding connections near MAX_CONNECTIONS (default: never). */
  shedding?: () => boolean;
  /** One light upstream call, made when /readyz finds us not ready (see below). */
  probe: () => Promise<unknown>;
  /** How long /readyz waits for that probe before answering with what it knows. */
  probeWaitMs?: number;
  /** Resolves after `ms` (tests inject one that never resolves, or resolves at once). */
  delay?: (ms: number, signal: AbortSignal) => Promise<void>;
}

/** Within a load balancer's usual 5 s probe timeout, with room to spare. */
const PROBE_WAIT_MS = 2000;
const NO_STORE_HEADERS = { 'Cache-Control': NO_STORE };

const defaultDelay = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => clearTimeout(timer), { once: true });
  });

/**
 * The admin listener's three routes (docs/deployment.md "Health and metrics"). They live on their own
 * port, bound to loopback by default, so nothing here is reachable on the public port.
 *
 * A not-ready /readyz makes one upstream call (shared by concurrent checks) before answering:
 * without traffic there would be no calls to learn from, and an instance taken out of rotation
 * would never see the upstream come back.
 */
export function createAdminApp(options: AdminAppOptions) {
  const { registry, readiness, cacheWarm, shedding = () => false, probe, probeWaitMs = PROBE_WAIT_MS, delay = defaultDelay } = options;
  let probing: Promise<unknown> | undefined;
  const probeOnce = () =>
    (probing ??= probe()
      .catch(() => undefined)
      .finally(() => {
        probing = undefined;
      }));

  return new Hono()
    .get('/healthz', (c) => c.text('ok\n', 200, NO_STORE_HEADERS))
    .get('/readyz', async function readyz(c) {
      // A shedding listener is not the upstream's doing: no probe would change the answer.
      if (!shedding() && !readiness.state(cacheWarm()).ready) {
        const done = new AbortController();
        await Promise.race([probeOnce(), delay(probeWaitMs, done.signal)]);
        done.abort();
      }
      const state = readiness.state(cacheWarm(), shedding());
      if (state.ready) return c.text('ready\n', 200, NO_STORE_HEADERS);
      return c.text(`not ready: ${state.reason}\n`, 503, NO_STORE_HEADERS);
    })
    .get('/metrics', async (c) => c.body(await registry.metrics(), 200, { ...NO_STORE_HEADERS, 'Content-Type': registry.contentType }))
    .notFound((c) => c.text('not found\n', 404, NO_STORE_HEADERS));
}
