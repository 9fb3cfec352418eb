// Stale serve: past its TTL, a cached read is answered at once as STALE while the upstream is
// slow, timed at the client and from the BFF's own access log.
import { Agent } from 'node:http';
import { performance } from 'node:perf_hooks';
import { get } from '../lib/http.mjs';
import { startBff } from '../lib/processes.mjs';
import { settings } from '../lib/settings.mjs';
import { progress, sleep } from '../lib/stats.mjs';

/** A BFF with CACHE_TTL_SECONDS=1, warmed, then read sequentially while the upstream takes `settings.staleLatencyMs`. */
export async function runStaleServe({ sim, servers }) {
  progress(`stale serve: CACHE_TTL_SECONDS=1, upstream switched to ${settings.staleLatencyMs} ms`);
  sim.setLatency(settings.upstreamLatencyMs);
  const staleServer = await startBff('bff-stale', sim.baseUrl, { extraEnv: { CACHE_TTL_SECONDS: '1' }, captureLines: 5000 });
  servers.push(staleServer);
  const slug = sim.archive.issues[1].slug;
  const paths = [`/api/issues/${slug}`, '/api/issues', '/api/categories'];
  const single = new Agent({ keepAlive: true, maxSockets: 1 });
  for (const path of paths) {
    await get(single, staleServer.url + path);
    const warm = await get(single, staleServer.url + path);
    if (warm.headers['x-cache'] !== 'HIT') throw new Error(`stale warm-up of ${path}: X-Cache ${warm.headers['x-cache']}`);
  }
  const callsBefore = { ...sim.counts() };
  sim.setLatency(settings.staleLatencyMs);
  await sleep(1500); // past the 1 s TTL, in real time
  const samples = { STALE: [], other: {}, slowest: [] };
  const windowMs = Math.max(100, settings.staleLatencyMs * 0.8);
  const started = performance.now();
  for (let i = 0; i < 600 && performance.now() - started < windowMs; i += 1) {
    const path = paths[i % paths.length];
    const answer = await get(single, staleServer.url + path);
    const state = answer.headers['x-cache'] ?? 'none';
    if (answer.status === 200 && state === 'STALE') {
      samples.STALE.push(answer.ms);
      samples.slowest.push({ i, path, ms: answer.ms, atMs: performance.now() - started });
    } else samples.other[`${answer.status} ${state}`] = (samples.other[`${answer.status} ${state}`] ?? 0) + 1;
  }
  single.destroy();
  await sleep(Math.max(settings.staleLatencyMs + 200, 400)); // refreshes land; the access log (flushed every 250 ms) arrives
  // Server-side time of the same requests, from the BFF's own access log ("ms" of each STALE request line).
  const serverMs = [];
  for (const line of staleServer.log.captured) {
    try {
      const entry = JSON.parse(line);
      if (entry.event === 'request' && entry.cache === 'STALE' && typeof entry.ms === 'number') serverMs.push(entry.ms);
    } catch {
      // not a JSON line (the listening banner)
    }
  }
  serverMs.sort((a, b) => a - b);
  const pickServer = (p) => serverMs[Math.min(serverMs.length - 1, Math.ceil((p / 100) * serverMs.length) - 1)];
  const callsAfter = sim.counts();
  sim.setLatency(settings.upstreamLatencyMs);
  const times = samples.STALE.sort((a, b) => a - b);
  const pick = (p) => times[Math.min(times.length - 1, Math.ceil((p / 100) * times.length) - 1)];
  const refreshCalls = {};
  for (const key of Object.keys(callsAfter)) {
    if (key === 'unknownSlugCalls') continue;
    const delta = (callsAfter[key] ?? 0) - (callsBefore[key] ?? 0);
    if (delta) refreshCalls[key] = delta;
  }
  return {
    ttlSeconds: 1,
    upstreamLatencyMs: settings.staleLatencyMs,
    paths,
    staleResponses: times.length,
    otherResponses: samples.other,
    p50Ms: pick(50),
    p99Ms: pick(99),
    maxMs: times[times.length - 1],
    upstreamCallsDuringWindow: refreshCalls,
    slowest: samples.slowest.sort((a, b) => b.ms - a.ms).slice(0, 5),
    serverSide: serverMs.length
      ? {
          source: 'the BFF access log ("ms", 0.1 ms resolution)',
          requests: serverMs.length,
          p50Ms: pickServer(50),
          p99Ms: pickServer(99),
          maxMs: serverMs[serverMs.length - 1],
        }
      : null,
    measuredFrom: 'the orchestrator, one keep-alive connection, sequential requests',
  };
}
