// The CPU one accepted subscribe costs inside the process, without sockets: `app.request()` with a
// JSON body through the whole route over the in-process demo upstream, every address new, every
// request from its own IP (so neither the repeat guard nor the per-IP limit answers instead).
//   npm run build && node bench/subscribe-cost.mjs
// Variants, interleaved round by round so a busy machine weighs on each alike:
//   surge detection at its default of counting but never tripping (SUBSCRIBE_SURGE_PER_MINUTE=100000),
//   and turned off (0): what counting adds;
//   BENCH_BEFORE_DIST=<dir>: the same request on another build's dist/ (e.g. the commit before), as
//   a before/after.
// µs of this process's CPU per request, median of BENCH_ROUNDS (7) rounds of N requests. Bounded.
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { median, table } from './lib/stats.mjs';

const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 7));
const N = 2_000;

async function createVariant(label, distDir, env) {
  const load = (file) => import(pathToFileURL(resolve(distDir, file)).href);
  const [{ createApp }, { parseConfig }, { createDemoUpstream }, { createLogger }, { createUpstreamClient }] = await Promise.all([
    load('app.js'),
    load('config.js'),
    load('demo/demo-upstream.js'),
    load('log.js'),
    load('upstream/newsletter-api.js'),
  ]);
  const demo = createDemoUpstream({});
  const parsed = parseConfig({ NEWSLETTER_API_KEY: demo.apiKey, NEWSLETTER_API_BASE_URL: demo.baseUrl, ...env });
  if (!parsed.ok) throw new Error(parsed.problems.join('; '));
  const upstream = createUpstreamClient({ baseUrl: demo.baseUrl, apiKey: demo.apiKey, timeoutMs: 5_000, fetch: demo.fetch });
  const log = createLogger({ write: () => undefined, redact: [demo.apiKey] });
  const service = createApp({ config: parsed.config, upstream, log, clientIp: (c) => c.req.header('x-client-ip') });
  return { label, app: service.app, sent: 0 };
}

const cpuUs = () => {
  const { user, system } = process.cpuUsage();
  return user + system;
};

async function measure(variant) {
  const started = cpuUs();
  for (let i = 0; i < N; i += 1) {
    const n = variant.sent++;
    const res = await variant.app.request('/api/subscribe', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'x-client-ip': `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}` },
      body: JSON.stringify({ email: `reader-${n}@example.com`, optInAttestation: true }),
    });
    if (res.status !== 200) throw new Error(`${variant.label}: subscribe answered ${res.status} ${await res.text()}`);
    await res.arrayBuffer();
  }
  return (cpuUs() - started) / N;
}

const here = resolve(import.meta.dirname, '..', 'dist');
const variants = [
  await createVariant('detection on, never tripping', here, { SUBSCRIBE_SURGE_PER_MINUTE: '100000' }),
  await createVariant('detection off', here, { SUBSCRIBE_SURGE_PER_MINUTE: '0' }),
];
if (process.env.BENCH_BEFORE_DIST)
  variants.push(await createVariant('before (BENCH_BEFORE_DIST)', resolve(process.env.BENCH_BEFORE_DIST), {}));

// A warm-up round, not counted.
for (const variant of variants) await measure(variant);
const samples = new Map(variants.map((variant) => [variant.label, []]));
for (let round = 0; round < ROUNDS; round += 1) {
  for (const variant of variants) samples.get(variant.label).push(await measure(variant));
}
process.stdout.write(
  `${table(
    ['POST /api/subscribe, in process', `µs CPU per request (median of ${ROUNDS} × ${N})`, 'min', 'max'],
    variants.map(({ label }) => {
      const values = samples.get(label);
      return [label, median(values).toFixed(1), Math.min(...values).toFixed(1), Math.max(...values).toFixed(1)];
    }),
    [false, true, true, true],
  )}\n`,
);
