import type { Context, MiddlewareHandler } from 'hono';
import { createApp } from './app.js';
import type { Config } from './config.js';
import { createDemoUpstream } from './demo/demo-upstream.js';
import type { Logger } from './log.js';
import type { Metrics } from './metrics.js';
import type { RateLimiter } from './rate-limit.js';
import type { SharedTier } from './reads/shared-tier.js';
import type { RepeatGuard } from './subscribe/guards.js';
import type { HoldOff } from './upstream/hold-off.js';
import { createUpstreamClient } from './upstream/newsletter-api.js';

export interface RuntimeDeps {
  log: Logger;
  clientIp: (c: Context) => string | undefined;
  fetch?: typeof globalThis.fetch;
  now?: () => number;
  rateLimiter?: RateLimiter;
  /** Workers' Cache API tier, or Redis on Node when REDIS_URL is set (src/redis/). */
  sharedCache?: SharedTier;
  /** Shared through Redis on Node when REDIS_URL is set; per process otherwise. */
  repeatGuard?: RepeatGuard;
  holdOff?: HoldOff;
  /** Served at / in demo mode only; with a real upstream only the four API routes exist. */
  demoSite?: MiddlewareHandler;
  /** Prometheus on Node when ADMIN_PORT is set; nothing by default. */
  metrics?: Metrics;
}

/**
 * Creates the app for a parsed config, shared by the Node and Workers entries: chooses the real
 * upstream client, pointed at the configured service or (demo mode) at the embedded demo
 * upstream, then hands it to `createApp`. Returns what `createApp` returns.
 */
export function createAppForConfig(config: Config, deps: RuntimeDeps) {
  const upstream =
    config.mode === 'demo'
      ? createDemoClient(config, deps)
      : createUpstreamClient({
          baseUrl: config.apiBaseUrl ?? '',
          apiKey: config.apiKey ?? '',
          timeoutMs: config.upstreamTimeoutMs,
          fetch: deps.fetch,
          now: deps.now,
          holdOff: deps.holdOff,
          metrics: deps.metrics,
        });
  const { demoSite, holdOff: _holdOff, ...rest } = deps;
  // The upstream goes back too: the Node entry's readiness check calls it directly.
  return { ...createApp({ config, upstream, ...rest, site: config.mode === 'demo' ? demoSite : undefined }), upstream };
}

function createDemoClient(config: Config, deps: RuntimeDeps) {
  const demo = createDemoUpstream({ now: deps.now });
  return createUpstreamClient({
    baseUrl: demo.baseUrl,
    apiKey: demo.apiKey,
    timeoutMs: config.upstreamTimeoutMs,
    fetch: demo.fetch,
    now: deps.now,
    metrics: deps.metrics,
  });
}
