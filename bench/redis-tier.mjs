// The added latency of a read served by the Redis shared tier, over loopback: the same issue
// read N times from an instance whose memory holds it, and N times from a fresh instance
// (empty memory, the same Redis) that finds it in Redis. Starts its own redis-server.
// Usage: npm run build && node bench/redis-tier.mjs [N]
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { createApp } from '../dist/core/app.js';
import { parseConfig } from '../dist/core/config/config.js';
import { createFakeUpstream } from '../build/test/support/fake-upstream/fake.js';
import { connectRedis } from '../dist/node/redis/services.js';
import { createUpstreamClient } from '../dist/core/upstream/newsletter-api.js';

// Fresh instances are slow to build: keep N × their cost within the cache TTL (60 s).
const N = Number(process.argv[2] ?? 1000);
const KEY = 'bench-key-not-real-0000';
const SLUG = 'planning-next-years-plot';

const port = await new Promise((resolve) => {
  const probe = createServer().listen(0, '127.0.0.1', () => {
    const { port: free } = probe.address();
    probe.close(() => resolve(free));
  });
});
const redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'pipe' });
await new Promise((resolve) => redis.stdout.on('data', (chunk) => String(chunk).includes('Ready to accept') && resolve()));

const fake = createFakeUpstream({ apiKey: KEY, baseUrl: 'http://127.0.0.1:9/v1' });
const parsed = parseConfig({ NEWSLETTER_API_KEY: KEY, NEWSLETTER_API_BASE_URL: fake.baseUrl });
const services = await connectRedis({
  url: `redis://127.0.0.1:${port}`,
  timeoutMs: 100,
  namespace: fake.baseUrl,
  apiKey: KEY,
  subscribeLimitPerMinute: 10,
  cacheMaxAgeSeconds: 3600,
  log: { log: (level, event, fields) => console.log(level, event, JSON.stringify(fields)) },
});
const instance = () =>
  createApp({
    config: parsed.config,
    upstream: createUpstreamClient({ baseUrl: fake.baseUrl, apiKey: KEY, timeoutMs: 1000, fetch: fake.fetch }),
    sharedCache: services.sharedCache,
  }).app;

async function time(app) {
  const started = process.hrtime.bigint();
  const response = await app.request(`http://bff.test/api/issues/${SLUG}`);
  await response.arrayBuffer();
  if (response.status !== 200) throw new Error(`status ${response.status}`);
  return Number(process.hrtime.bigint() - started) / 1e6;
}
const percentile = (values, p) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((p / 100) * values.length))];

const warm = instance();
await time(warm);
await services.ping();
const upstreamBefore = fake.slugCalls(SLUG);
const memory = [];
const shared = [];
// Interleaved, so load on the machine touches both alike.
for (let round = 0; round < N; round += 1) {
  memory.push(await time(warm));
  const fresh = instance();
  // Its first request builds the router; that cost is the instance's, not the tier's.
  await (await fresh.request('http://bff.test/not-a-route')).arrayBuffer();
  shared.push(await time(fresh));
}
const line = (name, values) => `${name}: p50 ${percentile(values, 50).toFixed(3)} ms, p99 ${percentile(values, 99).toFixed(3)} ms`;
console.log(line('memory hit      ', memory));
console.log(line('shared-tier hit ', shared));
console.log(
  `added by the shared tier: p50 +${(percentile(shared, 50) - percentile(memory, 50)).toFixed(3)} ms, p99 +${(percentile(shared, 99) - percentile(memory, 99)).toFixed(3)} ms`,
);
// The tier alone: one GET of the stored issue over loopback, without building an instance.
const keys = [];
for (let round = 0; round < N; round += 1) {
  const started = process.hrtime.bigint();
  const entry = await services.sharedCache.get(`issue:${SLUG}`);
  keys.push(Number(process.hrtime.bigint() - started) / 1e6);
  if (!entry) throw new Error('the shared copy is missing');
}
console.log(line('tier GET alone  ', keys));
console.log(`redis healthy at the end: ${services.healthy()}`);
console.log(`upstream calls during the ${2 * N} reads: ${fake.slugCalls(SLUG) - upstreamBefore}`);
await services.close();
redis.kill('SIGKILL');
