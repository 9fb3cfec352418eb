// The app of the in-process measures (bench/workerd/ inside
// workerd): the real one from dist/ over the demo upstream, access log on (written to memory),
// one allowed origin. Resolves with the service, its newest slug and the bytes logged so far.
import { createApp } from '../../dist/core/app.js';
import { parseConfig } from '../../dist/core/config/config.js';
import { createDemoUpstream } from '../../dist/demo/upstream.js';
import { createLogger } from '../../dist/core/log.js';
import { createUpstreamClient } from '../../dist/core/upstream/newsletter-api.js';

export async function createDemoService(allowedOrigin) {
  const demo = createDemoUpstream({});
  const parsed = parseConfig({
    NEWSLETTER_API_KEY: demo.apiKey,
    NEWSLETTER_API_BASE_URL: demo.baseUrl,
    ALLOWED_ORIGINS: allowedOrigin,
    // On Node, BENCH_ACCESS_LOG=all measures a line per hit; workerd has no process.env here.
    ...(globalThis.process?.env?.BENCH_ACCESS_LOG && { ACCESS_LOG: globalThis.process.env.BENCH_ACCESS_LOG }),
  });
  if (!parsed.ok) throw new Error(parsed.problems.join('; '));
  const upstream = createUpstreamClient({ baseUrl: demo.baseUrl, apiKey: demo.apiKey, timeoutMs: 5_000, fetch: demo.fetch });
  let logged = 0;
  const log = createLogger({ write: (line) => (logged += line.length), redact: [demo.apiKey] });
  const service = createApp({ config: parsed.config, upstream, log });
  const slug = (await (await service.app.request('/api/issues?limit=1')).json()).data[0].slug;
  return { service, slug, logged: () => logged };
}
