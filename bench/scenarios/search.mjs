// Search: `GET /api/issues?q=` on an archive of 1,000 fat letters (~90 KiB of HTML each, prose over
// a 20,000-word vocabulary, plus ~60 KiB of editor state a row), read whole once by the real Node
// entry. Then 2,000 different searches one after another (1 to 3 words, whole words and prefixes,
// common and rare, an issue's own name, words no letter has), timed by the client and charged the
// server's CPU (/proc), beside the same number of cached archive pages for reference. The text
// index's memory is measured in a separate process (bench/lib/text-index-memory.mjs, with gc)
// building it as the service does. Goals (printed with each run): a search under 5 ms of CPU, the
// index under 10% of the letters' bytes. Every loop is bounded; the upstream and the BFF are stopped at the end.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createArchive, vocabularyWords } from '../../build/test/support/fake-upstream/archive.js';
import { startFakeUpstreamServer } from '../../build/test/support/fake-upstream/server.js';
import { get } from '../lib/http.mjs';
import { startBff, stopChild } from '../lib/processes.mjs';
import { API_KEY, benchDir, clkTck, settings } from '../lib/settings.mjs';
import { progress, sleep } from '../lib/stats.mjs';

const KIB = 1024;

/** utime + stime of a process in ms, from /proc. */
function cpuMs(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) / clkTck) * 1000;
}

/** A small deterministic generator (mulberry32), so every run sends the same queries. */
function seeded(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** `count` different queries a reader might type into the archive's search box. */
function queries(count, issues) {
  const words = vocabularyWords();
  const random = seeded(43);
  const pick = (from, to) => words[from + Math.floor(random() * (to - from))];
  const kinds = [
    () => pick(0, 300),
    () => `${pick(0, 3000)} ${pick(0, 3000)}`,
    () => `${pick(0, 2000)} ${pick(0, 8000)} ${pick(0, 20000)}`,
    () => pick(0, 6000).slice(0, 3 + Math.floor(random() * 3)),
    () => `Name${1 + Math.floor(random() * issues)}son`,
    () => pick(8000, 20000),
    () => `${pick(0, 500)} zzq${Math.floor(random() * 1e6)}`,
  ];
  const found = new Set();
  // Bounded: each kind yields many different queries.
  for (let tries = 0; found.size < count && tries < count * 20; tries += 1) found.add(kinds[Math.floor(random() * kinds.length)]());
  return [...found];
}

/**
 * Waits until the server is idle: after the cold read it compresses the letters the rows carried,
 * behind the answers (docs/performance.md), which would be charged to the searches. Bounded.
 */
async function settled(server, limitMs = 180_000) {
  const started = Date.now();
  while (Date.now() - started < limitMs) {
    const before = cpuMs(server.pid);
    await sleep(1000);
    if (cpuMs(server.pid) - before <= 20) return (Date.now() - started) / 1000;
  }
  throw new Error(`search: the server was still busy ${limitMs / 1000} s after the cold read`);
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

/** `paths` one after another on one connection: the client's milliseconds of each, and the server's CPU. */
async function timed(agent, server, paths) {
  const times = [];
  const statuses = {};
  let matches = 0;
  const cpuBefore = cpuMs(server.pid);
  for (const path of paths) {
    const answer = await get(agent, `${server.url}${path}`);
    statuses[answer.status] = (statuses[answer.status] ?? 0) + 1;
    if (answer.status === 200) matches += JSON.parse(answer.body).meta.total;
    times.push(answer.ms);
  }
  const cpu = cpuMs(server.pid) - cpuBefore;
  times.sort((a, b) => a - b);
  return {
    requests: paths.length,
    statuses,
    cpuMsPerRequest: cpu / paths.length,
    p50Ms: percentile(times, 50),
    p99Ms: percentile(times, 99),
    maxMs: times.at(-1),
    meanMatches: matches / paths.length,
  };
}

export async function runSearch() {
  const { issues, htmlKiB, jsonKiB, queries: queryCount } = settings.search;
  progress(`search: ${issues} issues of ~${htmlKiB} + ${jsonKiB} KiB (varied prose), ${queryCount} different searches`);
  const memory = JSON.parse(
    (
      await promisify(execFile)(
        process.execPath,
        ['--expose-gc', join(benchDir, 'lib/text-index-memory.mjs'), JSON.stringify({ issues, htmlKiB, prose: 'varied' })],
        {
          maxBuffer: 1024 * 1024,
          timeout: 600_000,
        },
      )
    ).stdout,
  );
  const archive = createArchive({ issues, contentBytes: htmlKiB * KIB, jsonBytes: jsonKiB * KIB, prose: 'varied' });
  const sim = await startFakeUpstreamServer({
    apiKey: API_KEY,
    latencyMs: 0,
    publication: archive,
    maxHoldMs: 60_000,
    variant: { order: 'newest-sent' },
  });
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  let bff;
  try {
    // A TTL past the run: every search is answered from the one index read at the start.
    bff = await startBff('bff-search', sim.baseUrl, { extraEnv: { CACHE_TTL_SECONDS: '3600' } });
    const cold = await get(agent, `${bff.url}/api/issues?limit=1`);
    if (cold.status !== 200) throw new Error(`search: the cold archive answered ${cold.status}`);
    const settledSeconds = await settled(bff);
    const all = queries(queryCount + 200, issues).map((q) => `/api/issues?q=${encodeURIComponent(q)}&limit=20`);
    // Warm-up: the dictionary's sorted list, the JIT.
    await timed(agent, bff, all.slice(0, 200));
    const search = await timed(agent, bff, all.slice(200));
    const page = await timed(
      agent,
      bff,
      Array.from({ length: queryCount }, (_, i) => `/api/issues?limit=20&offset=${(i % 50) * 20}`),
    );
    if (Object.keys(search.statuses).some((status) => status !== '200'))
      throw new Error(`search: answers ${JSON.stringify(search.statuses)}`);
    return { issues, htmlKiB, jsonKiB, coldMs: cold.ms, settledSeconds, search, cachedPage: page, index: memory };
  } finally {
    agent.destroy();
    if (bff) await stopChild(bff.child);
    await sim.stop();
  }
}

/** The scenario's lines of the printed report, with each goal. */
export function reportSearch(r) {
  const mark = (ok) => (ok ? 'ok' : 'MISSED');
  const share = r.index.measuredBytes / r.index.letterBytes;
  const mib = (bytes) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
  return [
    `search: ${r.issues} issues of ~${r.htmlKiB} + ${r.jsonKiB} KiB, ${r.search.requests} different searches one after another (cold archive read ${(r.coldMs / 1000).toFixed(1)} s, its letters compressed behind it in ${r.settledSeconds.toFixed(0)} s)`,
    `  a search                     ${r.search.cpuMsPerRequest.toFixed(2)} ms CPU, p50 ${r.search.p50Ms.toFixed(2)} ms, p99 ${r.search.p99Ms.toFixed(2)} ms, max ${r.search.maxMs.toFixed(1)} ms, ${r.search.meanMatches.toFixed(0)} matches on average  (goal < 5 ms CPU: ${mark(r.search.cpuMsPerRequest < 5)})`,
    `  a cached page (reference)    ${r.cachedPage.cpuMsPerRequest.toFixed(2)} ms CPU, p50 ${r.cachedPage.p50Ms.toFixed(2)} ms, p99 ${r.cachedPage.p99Ms.toFixed(2)} ms`,
    `  the text index               ${mib(r.index.measuredBytes)} measured (${mib(r.index.estimateBytes)} as the cache counts it) for ${mib(r.index.letterBytes)} of letters = ${(100 * share).toFixed(1)}%  (goal < 10%: ${mark(share < 0.1)})`,
    `                               ${r.index.dictionaryWords} words, ${mib(r.index.postingBytes)} of word lists, built in ${(r.index.buildCpuMs / 1000).toFixed(1)} s of CPU (${(r.index.buildCpuMs / r.issues).toFixed(1)} ms a letter)`,
  ];
}
