// One or more builds of the service, compared on a cached GET by the bench's paired CPU runs
// (docs/performance.md "Method"): in each round, each build in turn is started against the bench's
// upstream simulator and loaded at the same time as two bare Hono apps (base: Content-Type only;
// same-hdr: every header that build sends), a third of the connections each, on the server core.
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
// BENCH_ACCEPT_ENCODING [unset] sent to ours with every request, so it answers a compressed copy
// (the references answer the text, as bench/instructions.mjs's do), BENCH_REVALIDATE [unset] 1 to
// measure the 304: every side is sent `If-None-Match` with ours' ETag (the references answer 304).
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
} from './lib/processes.mjs';
import { startBaseline } from './scenarios/cached.mjs';
import { median } from './lib/stats.mjs';
import { API_KEY, env, settings } from './lib/settings.mjs';

const ROUNDS = Number(env.BENCH_BUILD_ROUNDS || 3);
const RUNS = Number(env.BENCH_BUILD_RUNS || 5);
const PATH_TEMPLATE = env.BENCH_PATH || '/api/issues';
let PATH = PATH_TEMPLATE;
const OURS_HEADERS = env.BENCH_ACCEPT_ENCODING ? { 'Accept-Encoding': env.BENCH_ACCEPT_ENCODING } : {};
const REVALIDATE = env.BENCH_REVALIDATE === '1';
/** A tick above this many ns: the process is off V8's fast path for ticks (60–260 ns normally). */
const SLOW_TICK_NS = 350;

async function measureBuild(entry, sim, agent) {
  const servers = [];
  try {
    const port = await freePort();
    const ours = await startServerProcess({
      name: 'bff-build',
      nodeArgs: [...TICK_PROBE_ARGS, ...profArgs('bff-build'), ...settings.nodeArgs],
      script: entry,
      env: bffEnv(sim.baseUrl, port),
      port,
      stdoutMode: settings.serverStdout,
    });
    servers.push(ours);
    await get(agent, ours.url + PATH);
    const hit = await get(agent, ours.url + PATH);
    if (hit.status !== 200 || hit.headers['x-cache'] !== 'HIT')
      throw new Error(`${entry}: ${PATH} answered ${hit.status}, X-Cache ${hit.headers['x-cache']}`);
    if (env.BENCH_ACCEPT_ENCODING) {
      const coded = await get(agent, ours.url + PATH, { headers: OURS_HEADERS });
      if (!coded.headers['content-encoding'])
        throw new Error(`${entry}: ${PATH} has no compressed copy for Accept-Encoding: ${env.BENCH_ACCEPT_ENCODING}`);
    }
    const answer = { body: hit.body, contentType: hit.headers['content-type'], ...(REVALIDATE && { etag: hit.headers.etag }) };
    const revalidation = REVALIDATE ? { 'If-None-Match': hit.headers.etag } : {};
    const base = await startBaseline(servers, 'baseline-builds', { [PATH]: answer });
    const same = await startBaseline(servers, 'baseline-same-headers-builds', {
      [PATH]: { ...answer, headers: headersToReplay(hit.headers) },
    });
    const third = {
      tool: settings.tool,
      connections: Math.max(1, Math.round(settings.connections / 3)),
      durationSec: settings.durationSec,
      warmupSec: 0,
      expectStatus: REVALIDATE ? 304 : 200,
    };
    const ratios = { base: [], same: [] };
    for (let run = 0; run <= RUNS; run += 1) {
      const [o, b, s] = await Promise.all(
        [ours, base, same].map((server) =>
          runLoad({
            ...third,
            url: server.url + PATH,
            serverPid: server.pid,
            headers: { ...(server === ours ? OURS_HEADERS : {}), ...revalidation },
          }),
        ),
      );
      for (const r of [o, b, s])
        if (r.errors || r.unexpected || !r.serverCpuUsPerRequest) throw new Error(`${entry}: a run had errors or unexpected answers`);
      // The first run of fresh processes is their warm-up.
      if (run === 0) continue;
      ratios.base.push(o.serverCpuUsPerRequest / b.serverCpuUsPerRequest);
      ratios.same.push(o.serverCpuUsPerRequest / s.serverCpuUsPerRequest);
    }
    const ticks = { ours: await probeTicks(ours), base: await probeTicks(base), same: await probeTicks(same) };
    return { base: median(ratios.base), same: median(ratios.same), runs: ratios.base, ticks };
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
  PATH = PATH_TEMPLATE.replace(':slug', sim.archive.issues[0].slug);
  // By position, so one build named twice (a check of the method) is measured as two.
  const builds = entries.map((entry, index) => ({ entry, label: `#${index + 1} ${entry}`, figures: [] }));
  try {
    for (let round = 1; round <= ROUNDS; round += 1) {
      for (const build of round % 2 === 1 ? builds : [...builds].reverse()) {
        const figure = await measureBuild(build.entry, sim, agent);
        build.figures.push(figure);
        const slow = Object.entries(figure.ticks)
          .filter(([, ns]) => ns > SLOW_TICK_NS)
          .map(([name]) => name);
        console.log(
          `round ${round} ${build.label}: vs base ${figure.base.toFixed(3)} (runs ${figure.runs.map((r) => r.toFixed(2)).join(' ')}), vs same-hdr ${figure.same.toFixed(3)}; ` +
            `tick ns ours ${figure.ticks.ours}, base ${figure.ticks.base}, same-hdr ${figure.ticks.same}${slow.length ? `  OFF THE FAST PATH: ${slow.join(', ')}` : ''}`,
        );
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
    console.log(`  ${label}: vs base ${show('base')}, vs same-hdr ${show('same')} (${clean.length} of ${list.length} rounds)`);
  }
}

main().catch((error) => {
  console.error(error);
  killAll('SIGKILL');
  process.exitCode = 1;
});
