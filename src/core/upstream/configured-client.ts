import type { Config } from '../config/config.js';
import { createDemoUpstream } from '../../demo/upstream.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import type { HoldOff, HoldOffStart } from './hold-off.js';
import { createUpstreamClient, type NewsletterApiClient } from './newsletter-api.js';

export interface UpstreamForConfigDeps {
  fetch?: typeof globalThis.fetch | undefined;
  now?: (() => number) | undefined;
  log?: Logger | undefined;
  metrics?: Metrics | undefined;
  /** Shared through Redis on Node when REDIS_URL is set; this process's memory otherwise. */
  holdOff?: HoldOff | undefined;
  /** Demo mode's public origin, for the sample publication's thumbnail URLs. */
  demoOrigin?: string | undefined;
  /** `check` waits out short hold-offs between its calls (see TransportOptions.waitWhenHeldOffMs); the service never does. */
  waitWhenHeldOffMs?: number | undefined;
  /** How a wait is waited (tests move a fake clock instead). */
  sleep?: ((ms: number) => Promise<void>) | undefined;
}

/**
 * The client a configuration asks for: the configured service, or in demo mode the embedded
 * demo upstream, paged as configured (the demo pages as the defaults guess). The service and
 * `check` both build theirs here, so `check` probes exactly what the site will call.
 */
export function createUpstreamForConfig(config: Config, deps: UpstreamForConfigDeps): NewsletterApiClient {
  const common = {
    timeoutMs: config.upstreamTimeoutMs,
    now: deps.now,
    log: deps.log,
    paging: config.listPaging,
    ...(deps.metrics ? { metrics: deps.metrics } : {}),
    ...(deps.holdOff ? { holdOff: deps.holdOff } : {}),
    ...(deps.waitWhenHeldOffMs ? { waitWhenHeldOffMs: deps.waitWhenHeldOffMs } : {}),
    ...(deps.sleep ? { sleep: deps.sleep } : {}),
    onHoldOff: (start: HoldOffStart) => logHoldOff(deps.log, start),
  };
  if (config.mode === 'demo') {
    const demo = createDemoUpstream({ now: deps.now, ...(deps.demoOrigin ? { siteOrigin: deps.demoOrigin } : {}) });
    return createUpstreamClient({ ...common, baseUrl: demo.baseUrl, apiKey: demo.apiKey, fetch: demo.fetch });
  }
  return createUpstreamClient({
    ...common,
    baseUrl: config.apiBaseUrl ?? '',
    apiKey: config.apiKey ?? '',
    fetch: deps.fetch,
  });
}

/** One line per hold-off an upstream 429 starts (not per call it refuses): which call, and until when. */
function logHoldOff(log: Logger | undefined, start: HoldOffStart): void {
  log?.log('warn', 'upstream_hold_off', {
    operation: start.operation,
    refusedCall: start.call,
    until: new Date(start.untilMs).toISOString(),
    retryAfterSeconds: start.retryAfterSeconds,
  });
}
