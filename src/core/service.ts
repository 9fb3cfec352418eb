import { DEFAULT_DEMO_ORIGIN, DEMO_PUBLICATION_NAME } from '../demo/sample-publication.js';
import { createApp, type AppDeps } from './app.js';
import type { Config } from './config/config.js';
import { createUpstreamForConfig, type UpstreamForConfigDeps } from './upstream/configured-client.js';

export interface RuntimeDeps
  extends Omit<AppDeps, 'config' | 'upstream' | 'log' | 'clientIp'>,
    Required<Pick<AppDeps, 'log' | 'clientIp'>>,
    Pick<UpstreamForConfigDeps, 'holdOff'> {
  demoOrigin?: string;
}

export function linkOriginOf(host: string, port: number): string {
  const linkHost = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return `http://${linkHost.includes(':') ? `[${linkHost}]` : linkHost}:${port}`;
}

/** `fetch` serves the upstream and the build hook. The upstream goes back too: the Node entry's readiness check calls it directly. */
export function createAppForConfig(given: Config, deps: RuntimeDeps) {
  const demoOrigin = deps.demoOrigin ?? DEFAULT_DEMO_ORIGIN;
  // Demo mode's feeds link to the example site it serves (as examples/site/archive.js does) unless told otherwise.
  const config: Config =
    given.mode === 'demo'
      ? {
          ...given,
          siteIssueUrl: given.siteIssueUrl ?? `${demoOrigin}/issue.html?slug={slug}`,
          publicationName: given.publicationName ?? DEMO_PUBLICATION_NAME,
          publicBaseUrl: given.publicBaseUrl ?? demoOrigin,
        }
      : given;
  const upstream = createUpstreamForConfig(config, { ...deps, demoOrigin });
  return { ...createApp({ ...deps, config, upstream }), upstream };
}
