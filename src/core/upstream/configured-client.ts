import type { Config } from '../config/config.js';
import { createDemoUpstream } from '../../demo/upstream.js';
import { createUpstreamClient, type NewsletterApiClient, type UpstreamClientOptions } from './newsletter-api.js';

export interface UpstreamForConfigDeps
  extends Pick<UpstreamClientOptions, 'fetch' | 'now' | 'log' | 'metrics' | 'holdOff' | 'waitWhenHeldOffMs' | 'sleep'> {
  demoOrigin?: string | undefined;
}

/** The configured upstream or the demo; the service and `check` both build theirs here, so `check` probes what the site calls. */
export function createUpstreamForConfig(config: Config, deps: UpstreamForConfigDeps): NewsletterApiClient {
  const demo = config.mode === 'demo' ? createDemoUpstream({ now: deps.now, siteOrigin: deps.demoOrigin || undefined }) : undefined;
  return createUpstreamClient({
    timeoutMs: config.upstreamTimeoutMs,
    now: deps.now,
    log: deps.log,
    paging: config.listPaging,
    metrics: deps.metrics,
    holdOff: deps.holdOff,
    waitWhenHeldOffMs: deps.waitWhenHeldOffMs,
    sleep: deps.sleep,
    onHoldOff: ({ call, untilMs, ...start }) =>
      deps.log?.log('warn', 'upstream_hold_off', { ...start, refusedCall: call, until: new Date(untilMs).toISOString() }),
    baseUrl: demo ? demo.baseUrl : (config.apiBaseUrl ?? ''),
    apiKey: demo ? demo.apiKey : (config.apiKey ?? ''),
    fetch: demo ? demo.fetch : deps.fetch,
  });
}
