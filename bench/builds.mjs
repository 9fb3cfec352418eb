// One or more builds of the service, compared on a cached GET by the bench's paired CPU runs
// (docs/performance.md "Method"): in each round, each build in turn is started against the bench's
// upstream simulator and loaded at the same time as two bare Hono apps (base: Content-Type only;
// same-hdr: every header that build sends), an equal share of the connections each, on the server core.
// A build's figure for the round is the median of its paired ratios; rounds alternate the builds,
// so a slow stretch of this shared machine meets all of them. Each process's process.nextTick is
// timed after the runs (bench/lib/tick-probe.cjs): one that left V8's fast path
// (docs/node-http.md "process.nextTick after an idle spell") is marked, as its figure is not
// comparable with the others'.
//
//   npm run build:bench && BENCH_BUILDS='/tmp/before/dist/cli.js dist/cli.js' node bench/builds.mjs
//
// Environment (defaults in brackets): BENCH_BUILDS the entries to compare, space-separated; BENCH_BUILD_ROUNDS [3], BENCH_BUILD_RUNS [5] paired runs per
// process after one unmeasured, BENCH_DURATION [3] seconds each, BENCH_PATH [/api/issues] (`:slug` stands for the newest issue's),
// BENCH_ACCEPT_ENCODING [unset] sent with every request, so ours answers a compressed copy (the
// references answer the same compressed bytes, with its Content-Encoding), BENCH_REVALIDATE [unset] 1 to
// measure the 304: every side is sent `If-None-Match` with ours' ETag (the references answer 304),
// BENCH_WARM [every] which reads each build answers before it is measured: `every` route and a page in each coding, with and
// without an Origin, 200 and 304, as a server in service has (V8's inline caches then have seen every header shape), or only the measured `path`,
// BENCH_BUILDS_TOGETHER [unset] 1 to load every build at once with the references (the connections
// split between them; the builds started in the other order each round): a build's figure against the
// first's is then the median of per-run ratios taken under the same load, fine enough for a few percent
// (the rounds above cannot tell those apart). Their same-hdr reference sends the headers of the build started first.
import { Agent } from 'node:http';
import { resolve } from 'node:path';
import { get, headersToReplay } from './lib/http.mjs';
import { startUpstreamSim } from '../build/test/support/fake-upstream/bench-upstream.js';
import {
  bffEnv,
  freePort,
  killAll,
  probeTicks,
  profArgs,
  runLoad,
  startServerProcess,
  stopChild,
  TICK_PROBE_ARGS,
  waitUntilQuiet,
} from './lib/processes.mjs';
import { startBaseline } from './scenarios/cached.mjs';
import { median } from './lib/stats.mjs';
import { API_KEY, env, settings } from './lib/settings.mjs';

if (settings.demo) throw new Error('BENCH_DEMO=1 is for bench/run.mjs: bench:builds serves the fake upstream');
const ROUNDS = Number(env.BENCH_BUILD_ROUNDS || 3);
const RUNS = Number(env.BENCH_BUILD_RUNS || 5);
const PATH_TEMPLATE = env.BENCH_PATH || '/api/issues';
let PATH = PATH_TEMPLATE;
let SLUG = '';
const OURS_HEADERS = env.BENCH_ACCEPT_ENCODING ? { 'Accept-Encoding': env.BENCH_ACCEPT_ENCODING } : {};
const REVALIDATE = env.BENCH_REVALIDATE === '1';
const TOGETHER = env.BENCH_BUILDS_TOGETHER === '1';
if (!['every', 'path', undefined].includes(env.BENCH_WARM)) throw new Error('BENCH_WARM is `every` or `path`');
const WARM_EVERY = env.BENCH_WARM !== 'path';
/** Granted, as a site's own origin is: the warm-up asks with it and without, as the site's pages and its server do. */
const SITE_ORIGIN = 'https://www.example.com';
/** A tick above this many ns: the process is off V8's fast path for ticks (60–260 ns normally). */
const SLOW_TICK_NS = 350;

async function startBuild(entry, sim, agent, servers) {
  const port = await freePort();
  const ours = await startServerProcess({
    name: 'bff-build',
    nodeArgs: [...TICK_PROBE_ARGS, ...profArgs('bff-build'), ...settings.nodeArgs],
    script: entry,
    env: bffEnv(sim.baseUrl, port, { ALLOWED_ORIGINS: SITE_ORIGIN }),
    port,
    stdoutMode: settings.serverStdout,
  });
  servers.push(ours);
  await get(agent, ours.url + PATH);
  const hit = await get(agent, ours.url + PATH);
  if (hit.status !== 200 || hit.headers['x-cache'] !== 'HIT')
    throw new Error(`${entry}: ${PATH} answered ${hit.status}, X-Cache ${hit.headers['x-cache']}`);
  if (WARM_EVERY) await warmEveryRead(agent, ours.url, true);
  let served = hit;
  if (env.BENCH_ACCEPT_ENCODING) {
    served = await get(agent, ours.url + PATH, { headers: OURS_HEADERS });
    if (!served.headers['content-encoding'])
      throw new Error(`${entry}: ${PATH} has no compressed copy for Accept-Encoding: ${env.BENCH_ACCEPT_ENCODING}`);
  }
  return { ours, served };
}

/**
 * Each route and a page, in each coding, with and without an Origin, 200 and 304: what a server in service has answered.
 * `ours`: each answer must be a 200, then a 304 (a reference has only the measured path, and answers others 404).
 */
async function warmEveryRead(agent, url, ours = false) {
  for (const path of ['/api/issues', '/api/issues?limit=5', `/api/issues/${SLUG}`, '/api/categories'])
    for (const coding of [undefined, 'gzip', 'br'])
      for (const origin of [undefined, SITE_ORIGIN]) {
        const headers = { ...(coding && { 'Accept-Encoding': coding }), ...(origin && { Origin: origin }) };
        const first = await get(agent, url + path, { headers });
        const { etag } = first.headers;
        const second = etag && (await get(agent, url + path, { headers: { ...headers, 'If-None-Match': etag } }));
        if (ours && (first.status !== 200 || second?.status !== 304))
          throw new Error(
            `warm-up of ${path} (${coding ?? 'identity'}, ${origin ?? 'no Origin'}) answered ${first.status}, then ${etag ? second.status : 'no ETag'}`,
          );
      }
}

/** The figures of one round for each entry, all loaded at once with the two references. */
async function measureBuilds(entries, sim, agent, reference = 0) {
  const servers = [];
  try {
    const started = [];
    for (const entry of entries) started.push(await startBuild(entry, sim, agent, servers));
    const { served } = started[0];
    // The references answer the bytes ours answers: its compressed copy, said so, when one was asked for.
    const coding = served.headers['content-encoding'];
    const body = coding ? { bodyBase64: served.bytes.toString('base64'), contentEncoding: coding } : { body: served.body };
    const answer = { ...body, contentType: served.headers['content-type'], ...(REVALIDATE && { etag: served.headers.etag }) };
    const revalidation = REVALIDATE ? { 'If-None-Match': served.headers.etag } : {};
    for (const { ours } of started) await waitUntilQuiet(ours);
    const base = await startBaseline(servers, 'baseline-builds', { [PATH]: answer });
    const same = await startBaseline(servers, 'baseline-same-headers-builds', {
      [PATH]: { ...answer, headers: headersToReplay(served.headers) },
    });
    // The references are asked the same (what they do not have they answer 404).
    if (WARM_EVERY) for (const server of [base, same]) await warmEveryRead(agent, server.url);
    const share = {
      tool: settings.tool,
      connections: Math.max(1, Math.round(settings.connections / (entries.length + 2))),
      durationSec: settings.durationSec,
      warmupSec: 0,
      expectStatus: REVALIDATE ? 304 : 200,
    };
    const runs = entries.map(() => ({ base: [], same: [], first: [], ours: [], baseUs: [] }));
    for (let run = 0; run <= RUNS; run += 1) {
      const loads = await Promise.all(
        [...started.map(({ ours }) => ours), base, same].map((server) =>
          runLoad({ ...share, url: server.url + PATH, serverPid: server.pid, headers: { ...OURS_HEADERS, ...revalidation } }),
        ),
      );
      for (const r of loads)
        if (r.errors || r.unexpected || !r.serverCpuUsPerRequest) throw new Error('a run had errors or unexpected answers');
      // The first run of fresh processes is their warm-up.
      if (run === 0) continue;
      const us = loads.map((r) => r.serverCpuUsPerRequest);
      const [b, s] = us.slice(-2);
      for (const [index, figures] of runs.entries()) {
        figures.base.push(us[index] / b);
        figures.same.push(us[index] / s);
        figures.first.push(us[index] / us[reference]);
        figures.ours.push(us[index]);
        figures.baseUs.push(b);
      }
    }
    const baseTicks = { base: await probeTicks(base), same: await probeTicks(same) };
    return await Promise.all(
      runs.map(async (figures, index) => ({
        base: median(figures.base),
        same: median(figures.same),
        first: median(figures.first),
        runs: figures.base,
        us: { ours: median(figures.ours), base: median(figures.baseUs) },
        ticks: { ours: await probeTicks(started[index].ours), ...baseTicks },
      })),
    );
  } finally {
    for (const server of servers) await stopChild(server.child);
  }
}

async function main() {
  const entries = (env.BENCH_BUILDS ?? '')
    .split(' ')
    .filter(Boolean)
    .map((entry) => resolve(entry));
  if (entries.length === 0)
    throw new Error("name the builds to compare: BENCH_BUILDS='/tmp/before/dist/cli.js dist/cli.js' node bench/builds.mjs");
  const agent = new Agent({ keepAlive: true });
  const sim = await startUpstreamSim({ latencyMs: settings.upstreamLatencyMs, apiKey: API_KEY });
  SLUG = sim.archive.issues[0].slug;
  PATH = PATH_TEMPLATE.replace(':slug', SLUG);
  // By position, so one build named twice (a check of the method) is measured as two.
  const builds = entries.map((entry, index) => ({ entry, label: `#${index + 1} ${entry}`, figures: [] }));
  try {
    for (let round = 1; round <= ROUNDS; round += 1) {
      const order = round % 2 === 1 ? builds : [...builds].reverse();
      const groups = TOGETHER ? [order] : order.map((build) => [build]);
      for (const group of groups) {
        const figures = await measureBuilds(
          group.map((build) => build.entry),
          sim,
          agent,
          Math.max(0, group.indexOf(builds[0])),
        );
        for (const [index, build] of group.entries()) logFigure(round, build, figures[index]);
      }
    }
  } finally {
    agent.destroy();
    await sim.close();
  }
  console.log(`\n${PATH}, CPU per request vs bare Hono, median of each round's figure (rounds whose processes all kept the fast path):`);
  for (const { label, figures: list } of builds) {
    const clean = list.filter((figure) => Object.values(figure.ticks).every((ns) => ns <= SLOW_TICK_NS));
    const show = (key) => (clean.length ? median(clean.map((figure) => figure[key])).toFixed(3) : '-');
    const first = TOGETHER ? `, vs ${builds[0].label} ${show('first')}` : '';
    console.log(`  ${label}: vs base ${show('base')}, vs same-hdr ${show('same')}${first} (${clean.length} of ${list.length} rounds)`);
  }
}

function logFigure(round, build, figure) {
  build.figures.push(figure);
  const slow = Object.entries(figure.ticks)
    .filter(([, ns]) => ns > SLOW_TICK_NS)
    .map(([name]) => name);
  const first = TOGETHER ? `, vs #1 ${figure.first.toFixed(3)}` : '';
  console.log(
    `round ${round} ${build.label}: vs base ${figure.base.toFixed(3)} (runs ${figure.runs.map((r) => r.toFixed(2)).join(' ')}), vs same-hdr ${figure.same.toFixed(3)}${first}; ` +
      `µs CPU a request: ours ${figure.us.ours.toFixed(1)}, base ${figure.us.base.toFixed(1)}; ` +
      `tick ns ours ${figure.ticks.ours}, base ${figure.ticks.base}, same-hdr ${figure.ticks.same}${slow.length ? `  OFF THE FAST PATH: ${slow.join(', ')}` : ''}`,
  );
}

main().catch((error) => {
  console.error(error);
  killAll('SIGKILL');
  process.exitCode = 1;
});
