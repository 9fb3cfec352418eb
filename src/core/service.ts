import type { Context, MiddlewareHandler } from 'hono';
import { DEFAULT_DEMO_ORIGIN, DEMO_PUBLICATION_NAME } from '../demo/sample-publication.js';
import { createApp, type AppDeps } from './app.js';
import type { Config } from './config/config.js';
import type { Logger } from './log.js';
import { createUpstreamForConfig } from './upstream/configured-client.js';
import type { HoldOff } from './upstream/hold-off.js';

/** What an entry (Node, Workers) gives the app besides its config: AppDeps, and the upstream client's own. */
export interface RuntimeDeps extends Omit<AppDeps, 'config' | 'upstream' | 'site' | 'log' | 'clientIp'> {
  log: Logger;
  clientIp: (c: Context) => string | undefined;
  fetch?: typeof globalThis.fetch;
  /** Hold-offs after an upstream 429: in Redis when REDIS_URL is set, in this process otherwise. */
  holdOff?: HoldOff;
  demoSite?: MiddlewareHandler;
  /** Where the demo's thumbnails and feed links point: known to the entry (Node: HOST and PORT), never taken from a request. */
  demoOrigin?: string;
}

/** The example site's issue page as demo mode serves it (examples/site/archive.js links issues so). */
export const DEMO_ISSUE_PATH = '/issue.html?slug={slug}';

/** The origin a link to a Node listener on HOST and PORT can use: a wildcard address becomes the loopback of its family. */
export function linkOriginOf(host: string, port: number): string {
  const linkHost = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return `http://${linkHost.includes(':') ? `[${linkHost}]` : linkHost}:${port}`;
}

/** The app for a parsed config (Node and Workers), over the configured upstream or the embedded demo one; and the upstream. */
export function createAppForConfig(given: Config, deps: RuntimeDeps) {
  const demoOrigin = deps.demoOrigin ?? DEFAULT_DEMO_ORIGIN;
  // Demo mode's feeds link to the example site it serves and name the sample publication, unless told otherwise.
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
  const { demoSite, demoOrigin: _origin, holdOff: _holdOff, fetch: _fetch, ...rest } = deps;
  // The upstream goes back too: the Node entry's readiness check calls it directly.
  return { ...createApp({ config, upstream, ...rest, site: config.mode === 'demo' ? demoSite : undefined }), upstream };
}
