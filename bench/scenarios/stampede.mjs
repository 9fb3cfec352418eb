// Stampede: many concurrent cold requests for one slug must make one upstream call.
import { Agent } from 'node:http';
import { performance } from 'node:perf_hooks';
import { get } from '../lib/http.mjs';
import { settings } from '../lib/settings.mjs';
import { progress } from '../lib/stats.mjs';

/** `settings.stampedeRequests` overlapping cold requests for one slug on `fresh`, a BFF with an empty cache. */
export async function runStampede({ sim }, fresh) {
  const slug = sim.archive.issues[150].slug;
  const n = settings.stampedeRequests;
  progress(`stampede: ${n} concurrent cold requests for one slug (upstream ${settings.stampedeLatencyMs} ms)`);
  const wide = new Agent({ keepAlive: true, maxSockets: n, maxFreeSockets: n });
  // Open the n connections first (a 404 route, no upstream), so the n requests really overlap.
  await Promise.all(Array.from({ length: n }, () => get(wide, `${fresh.url}/api/warm-up-connections`)));
  sim.setLatency(settings.stampedeLatencyMs);
  const before = sim.slugCalls(slug);
  const started = performance.now();
  const answers = await Promise.all(Array.from({ length: n }, () => get(wide, `${fresh.url}/api/issues/${slug}`)));
  const wallMs = performance.now() - started;
  sim.setLatency(settings.upstreamLatencyMs);
  wide.destroy();
  const statuses = {};
  const cacheStates = {};
  for (const a of answers) {
    statuses[a.status] = (statuses[a.status] ?? 0) + 1;
    const state = a.headers['x-cache'] ?? 'none';
    cacheStates[state] = (cacheStates[state] ?? 0) + 1;
  }
  const times = answers.map((a) => a.ms).sort((x, y) => x - y);
  return {
    requests: n,
    slug,
    upstreamLatencyMs: settings.stampedeLatencyMs,
    upstreamCalls: sim.slugCalls(slug) - before,
    statuses,
    cacheStates,
    allIdenticalBodies: answers.every((a) => a.body === answers[0].body),
    p50Ms: times[Math.floor(times.length / 2)],
    maxMs: times[times.length - 1],
    wallMs,
  };
}
