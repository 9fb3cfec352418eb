// Cache figures (issue: caching): upstream calls for a stampede, heap growth under a slug scan,
// and the time to serve a stale hit while the upstream is slow. In process, over the compiled
// app (dist/), with a simulated upstream that answers after a real delay. Run: npm run bench:cache
import { createApp } from '../dist/core/app.js';
import { parseConfig } from '../dist/core/config/config.js';
import { createUpstreamClient } from '../dist/core/upstream/newsletter-api.js';

const BASE_URL = 'http://127.0.0.1:9/v1';
const delay = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function issue(slug) {
  return {
    id: `id-${slug}`,
    slug,
    subject: `Subject ${slug}`,
    previewText: 'Preview',
    thumbnailUrl: null,
    contentHtml: `<p>${'Lorem ipsum dolor sit amet. '.repeat(80)}</p>`,
    status: 'sent',
    isPublic: true,
    category: null,
    sentAt: '2026-11-01T09:00:00.000Z',
  };
}

function createSimulatedUpstream() {
  const state = { calls: 0, latencyMs: 50 };
  const fetch = async (input) => {
    state.calls += 1;
    await delay(state.latencyMs);
    const slug = decodeURIComponent(new URL(String(input)).pathname.split('/').pop());
    const body = slug.startsWith('known')
      ? { ok: true, data: issue(slug) }
      : { ok: false, error: { code: 'NOT_FOUND', message: 'not found' } };
    return new Response(JSON.stringify(body), {
      status: body.ok ? 200 : 404,
      headers: { 'Content-Type': 'application/json' },
    });
  };
  return { state, fetch };
}

function createBench(env = {}) {
  let time = 1_700_000_000_000;
  const clock = { now: () => time, advance: (ms) => (time += ms) };
  const parsed = parseConfig({ NEWSLETTER_API_KEY: 'bench-key-not-real', NEWSLETTER_API_BASE_URL: BASE_URL, ...env });
  if (!parsed.ok) throw new Error(parsed.problems.join('\n'));
  const simulated = createSimulatedUpstream();
  const upstream = createUpstreamClient({
    baseUrl: BASE_URL,
    apiKey: 'bench-key-not-real',
    timeoutMs: 8000,
    fetch: simulated.fetch,
    now: clock.now,
  });
  const service = createApp({ config: parsed.config, upstream, now: clock.now });
  return { ...service, clock, simulated };
}

function heapMiB() {
  globalThis.gc?.();
  const { heapUsed, rss } = process.memoryUsage();
  return { heap: heapUsed / 2 ** 20, rss: rss / 2 ** 20 };
}

async function stampede() {
  const { app, simulated } = createBench();
  const responses = await Promise.all(Array.from({ length: 1000 }, () => app.request('/api/issues/known-stampede')));
  const ok = responses.filter((response) => response.status === 200).length;
  return { requests: 1000, ok, upstreamCalls: simulated.state.calls };
}

async function slugScan() {
  const { app, simulated, stats } = createBench();
  simulated.state.latencyMs = 0;
  const before = heapMiB();
  for (let i = 0; i < 100_000; i += 1) await app.request(`/api/issues/unknown-slug-${i}`);
  const after = heapMiB();
  const { notFoundEntries, notFoundBytes, bytes } = stats();
  return {
    slugs: 100_000,
    upstreamCalls: simulated.state.calls,
    heapGrowthMiB: +(after.heap - before.heap).toFixed(1),
    rssGrowthMiB: +(after.rss - before.rss).toFixed(1),
    notFoundEntries,
    notFoundBytes,
    cacheBytes: bytes,
    gcExposed: typeof globalThis.gc === 'function',
  };
}

async function staleServe() {
  const { app, simulated, clock } = createBench();
  await app.request('/api/issues/known-stale');
  clock.advance(61_000);
  simulated.state.latencyMs = 1000;
  const timings = [];
  for (let i = 0; i < 50; i += 1) {
    const started = performance.now();
    const response = await app.request('/api/issues/known-stale');
    timings.push(performance.now() - started);
    if (response.headers.get('x-cache') !== 'STALE') throw new Error(`expected STALE, got ${response.headers.get('x-cache')}`);
  }
  timings.sort((a, b) => a - b);
  return {
    upstreamLatencyMs: 1000,
    requests: timings.length,
    p50Ms: +timings[Math.floor(timings.length / 2)].toFixed(3),
    maxMs: +timings[timings.length - 1].toFixed(3),
    upstreamCallsDuringStale: simulated.state.calls - 1,
  };
}

const results = { node: process.version, stampede: await stampede(), slugScan: await slugScan(), staleServe: await staleServe() };
console.log(JSON.stringify(results, null, 2));
