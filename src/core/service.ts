import type { Context, MiddlewareHandler } from 'hono';
import { createApp, type ArchiveWatchDeps } from './app.js';
import type { Config } from './config/config.js';
import { DEFAULT_DEMO_ORIGIN, DEMO_PUBLICATION_NAME } from '../demo/sample-publication.js';
import type { Logger } from './log.js';
import type { BodyEncoder } from './reads/rendered-json.js';
import type { Metrics } from './metrics.js';
import type { RateLimiter } from './http/rate-limit.js';
import type { SharedTier } from './reads/shared-tier.js';
import type { RepeatGuard } from './subscribe/guards.js';
import type { SurgeCounter } from './subscribe/surge.js';
import { createUpstreamForConfig } from './upstream/configured-client.js';
import type { HoldOff } from './upstream/hold-off.js';

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
  /** Subscribe attempts of every instance (Redis) for surge detection; per process otherwise. */
  surgeCounter?: SurgeCounter;
  /** SUBSCRIBE_BLOCK_DISPOSABLE's list, loaded by the Node entry. */
  isDisposableDomain?: (domain: string) => boolean;
  /** Where hold-offs after an upstream 429 are kept: Redis when REDIS_URL is set, this process's memory otherwise. */
  holdOff?: HoldOff;
  /** Served at / in demo mode only; with a real upstream only the four API routes exist. */
  demoSite?: MiddlewareHandler;
  /** Prometheus on Node when ADMIN_PORT is set; nothing by default. */
  metrics?: Metrics;
  /** Node's compressed copies of cached bodies (node/compression.ts); none on Workers. */
  encodeBody?: BodyEncoder;
  /** How DEPLOY_HOOK_URL's watch runs here: Redis on Node with REDIS_URL, a KV namespace on Workers. */
  archiveWatch?: ArchiveWatchDeps;
  /** Node: whether the listener's request timeout cut a request off (see AppDeps.requestTimedOut). */
  requestTimedOut?: (c: Context) => boolean;
  /**
   * Demo mode's public origin, where it serves the example site: the sample thumbnails and the
   * feeds' issue links point there. Known to the entry (Node: HOST and PORT), never taken from
   * a request; DEFAULT_DEMO_ORIGIN (`npm run dev:worker`'s address) when not given.
   */
  demoOrigin?: string;
}

/** The example site's issue page as demo mode serves it (examples/site/archive.js links issues so). */
export const DEMO_ISSUE_PATH = '/issue.html?slug={slug}';

/**
 * The origin a link to a Node listener on HOST and PORT can use: a wildcard address is not
 * one a browser can visit, so it becomes the loopback address of its family.
 */
export function linkOriginOf(host: string, port: number): string {
  const linkHost = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return `http://${linkHost.includes(':') ? `[${linkHost}]` : linkHost}:${port}`;
}

/**
 * Creates the app for a parsed config, shared by the Node and Workers entries: chooses the real
 * upstream client, pointed at the configured service or (demo mode) at the embedded demo
 * upstream, then hands it to `createApp`. Returns what `createApp` returns.
 */
export function createAppForConfig(given: Config, deps: RuntimeDeps) {
  const demoOrigin = deps.demoOrigin ?? DEFAULT_DEMO_ORIGIN;
  // Demo mode's feeds link to the example site it serves and name the sample publication; it
  // knows its own public address. Each unless its variable says otherwise.
  const config: Config =
    given.mode === 'demo'
      ? {
          ...given,
          siteIssueUrl: given.siteIssueUrl ?? `${demoOrigin}${DEMO_ISSUE_PATH}`,
          publicationName: given.publicationName ?? DEMO_PUBLICATION_NAME,
          publicBaseUrl: given.publicBaseUrl ?? demoOrigin,
        }
      : given;
  const upstream = createUpstreamForConfig(config, { ...deps, demoOrigin });
  const { demoSite, demoOrigin: _origin, holdOff: _holdOff, ...rest } = deps;
  // The upstream goes back too: the Node entry's readiness check calls it directly.
  return { ...createApp({ config, upstream, ...rest, site: config.mode === 'demo' ? demoSite : undefined }), upstream };
}
