// `npm run bench`: the real Node entry (dist/cli.js, NODE_ENV=production)
// against a local upstream simulator, next to a bare-Hono baseline answering the same bytes,
// with load from a separate process. Prints a table and writes bench/results/latest.json.
//
// main() only orchestrates: each scenario is a module of bench/scenarios/, the shared machinery
// (settings, child processes, statistics) is in bench/lib/, and the printed report in
// bench/report.mjs. Everything listens on and targets 127.0.0.1. Every loop and wait is bounded; every child
// process is killed at the end, also on error or Ctrl-C.
//
// Environment overrides (defaults in brackets):
//   BENCH_DURATION [3]  seconds per measured run    BENCH_PAIRS [3]        baseline/same-headers/ours rounds per scenario
//   BENCH_CPU_PAIRS [5] paired CPU runs per cached scenario (ours and both bare Hono apps loaded at once; 0: none)
//   BENCH_CONNECTIONS [50]                          BENCH_WARMUP [1]       warm-up seconds (first pair only)
//   BENCH_UPSTREAM_LATENCY_MS [50]                  BENCH_TOOL [wrk when installed, else autocannon] (cached scenarios)
//   BENCH_SCENARIOS [all] comma list of: issues,deep,slug,categories,304,subscribe,stampede,scan,stale,archive-scale,search,bombing
//                   (or name them after `npm run bench --`, e.g. `npm run bench -- archive-scale`)
//   BENCH_ARCHIVE_ISSUES [1000]  BENCH_ARCHIVE_HTML_KIB [90]  BENCH_ARCHIVE_JSON_KIB [60] (contentHtml and
//   contentJson per row)  BENCH_ARCHIVE_LATENCY_MS [100]  BENCH_ARCHIVE_RESYNC_SECONDS [60]: the archive-scale scenario
//                   (`npm run bench:bombing` runs the bombing alone)
//   BENCH_SEARCH_ISSUES [1000]  BENCH_SEARCH_HTML_KIB [90]  BENCH_SEARCH_JSON_KIB [60]  BENCH_SEARCH_QUERIES [2000]: the
//                   search scenario (letters of varied prose; `npm run bench -- search` runs it alone)
//   BENCH_SUBSCRIBE_CONNECTIONS [10]                BENCH_STAMPEDE_REQUESTS [1000]
//   BENCH_STAMPEDE_LATENCY_MS [500]                 BENCH_SCAN_SLUGS [100000]   BENCH_SCAN_CONNECTIONS [50]
//   BENCH_SCAN_LATENCY_MS [0]                       BENCH_SCAN_MAX_SECONDS [150] the scan stops there if not done
//   BENCH_STALE_LATENCY_MS [1000]
//   BENCH_BOMBING_ADDRESSES [1000]  BENCH_BOMBING_IPS [250]  BENCH_BOMBING_SECONDS [30]
//   BENCH_BOMBING_HOLD_SECONDS [20] SUBSCRIBE_SURGE_SECONDS of the bombing runs (short, so the end is seen)
//   BENCH_SERVER_STDOUT [file], count or null: where the BFF's stdout (its access log) goes. file: a
//                       temporary file, counted after the run and removed, so the BFF pays for every
//                       line as it would with a file or journald while this process, which shares the
//                       load generator's core, does not read 300+ MB during the run; count: piped here
//                       and counted live; null: /dev/null
//   BENCH_CPU_PROF [unset] a directory: run every server under --cpu-prof (bff-*.cpuprofile, baseline-*,
//                  bff-fresh-* for stampede and scan, bff-stale-*); summarise with bench/profile-summary.mjs
//   BENCH_NO_PIN [unset] 1 to skip taskset pinning
//   BENCH_ENTRY [dist/cli.js] the server entry to measure (e.g. a patched copy, for before/after)
//   BENCH_CACHE_TTL_SECONDS [unset: the service's default] CACHE_TTL_SECONDS of the BFF processes
//   BENCH_ACCESS_LOG [unset: the service's default, summary] ACCESS_LOG of the BFF processes (all: a line per hit)
//   BENCH_NODE_ARGS [unset] extra node flags for every BFF process, space-separated (e.g. --trace-deopt)
//   BENCH_DEMO [unset] 1: ours in demo mode (its sample publication, no network fetch); issues, slug, categories, 304 only
//   BENCH_NGINX [1 when nginx is installed] 0 to leave out the nginx proxy_cache reference
//
// Two baselines run in the same rounds as ours: bare Hono sending the same body with Content-Type
// only (the target's reference), and bare Hono sending the same body with every header the BFF
// sends (security, CORS, cache headers, a constant X-Request-Id). The second separates the cost
// of writing those header lines from the cost of the code that produces them. When nginx is
// installed, a third reference runs in the same rounds: nginx proxy_cache (one process) in front
// of the second baseline, answering every request from its cache (bench/nginx.mjs).
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { cpus } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { get } from './lib/http.mjs';
import { countLines, canPin, killAll, LOAD_CPU, procStatus, SERVER_CPU, startBff, stopChild } from './lib/processes.mjs';
import { API_KEY, benchDir, cpuCount, root, settings, wants, wrkAvailable } from './lib/settings.mjs';
import { backgroundBusyPct, progress, say } from './lib/stats.mjs';
import { evaluateTargets, report } from './report.mjs';
import { cachedScenarioList, runCachedScenarios } from './scenarios/cached.mjs';
import { reportArchiveScale, runArchiveScale } from './scenarios/archive-scale.mjs';
import { reportSearch, runSearch } from './scenarios/search.mjs';
import { runSlugScan } from './scenarios/scan.mjs';
import { runStaleServe } from './scenarios/stale.mjs';
import { runStampede } from './scenarios/stampede.mjs';
import { runSubscribe } from './scenarios/subscribe.mjs';
import { runBombing } from './scenarios/bombing.mjs';
import { startUpstreamSim } from '../build/test/support/fake-upstream/bench-upstream.js';

async function main() {
  if (!existsSync(resolve(root, settings.entry))) {
    throw new Error(`${settings.entry} is missing: build first (npm run build), or run \`npm run bench\``);
  }
  const startedAt = new Date();
  const t0 = performance.now();
  const results = {
    meta: {
      date: startedAt.toISOString(),
      node: process.version,
      v8: process.versions.v8,
      platform: `${process.platform} ${process.arch}`,
      cpuCount: cpuCount,
      cpuModel: cpus()[0]?.model ?? 'unknown',
      pinned: canPin ? { server: Number(SERVER_CPU), loadGeneratorAndSimulator: Number(LOAD_CPU) } : false,
      loadTool: settings.tool,
      wrkAvailable,
      settings,
    },
  };

  results.meta.backgroundBusyPctBefore = await backgroundBusyPct();
  if (results.meta.backgroundBusyPctBefore > 10) {
    progress(
      `warning: other processes use ${results.meta.backgroundBusyPctBefore.toFixed(0)}% of this machine's CPU; figures will be noisy`,
    );
  }
  const sim = await startUpstreamSim({ latencyMs: settings.upstreamLatencyMs, apiKey: API_KEY });
  const servers = [];
  const agent = new Agent({ keepAlive: true, maxSockets: 16 });
  const run = { sim, agent, servers, results };

  try {
    let cachedScenarios = cachedScenarioList(sim.archive.issues[0].slug).filter((s) => wants(s.id));
    const needsMain = cachedScenarios.length > 0 || wants('subscribe');
    // The sample publication has too few issues for the deep page.
    if (settings.demo && settings.scenarios.some((id) => id === 'deep' || !cachedScenarios.some((s) => s.id === id))) {
      throw new Error('BENCH_DEMO=1 runs only the cached scenarios issues, slug, categories and 304');
    }

    let ours;
    if (needsMain) {
      progress(`starting the BFF (${settings.entry}, ${settings.demo ? 'demo mode' : 'NODE_ENV=production'}) and the baseline`);
      ours = await startBff('bff', sim.baseUrl);
      servers.push(ours);
      results.meta.oursStartRssMiB = procStatus(ours.pid).rssMiB;
    }
    // Demo mode answers from its sample publication: its newest issue is the slug scenarios' path.
    if (settings.demo) {
      const newest = JSON.parse((await get(agent, `${ours.url}/api/issues`)).body).data[0].slug;
      cachedScenarios = cachedScenarioList(newest).filter((s) => wants(s.id));
    }
    if (cachedScenarios.length > 0) await runCachedScenarios(run, ours, cachedScenarios);
    if (wants('subscribe')) results.subscribe = await runSubscribe(run, ours);

    if (ours) {
      results.meta.oursEndRss = procStatus(ours.pid);
      if (ours.log.file) Object.assign(ours.log, await countLines(ours.log.file));
      results.meta.oursAccessLog = { lines: ours.log.lines, bytes: ours.log.bytes, sink: settings.serverStdout };
    }
    // Stop the throughput servers before the memory scenarios: their cores and sockets are free.
    for (const server of servers.splice(0)) await stopChild(server.child);

    // Stampede and slug scan share a fresh BFF with the heap probe preloaded.
    if (wants('stampede') || wants('scan')) {
      const probeArgs = ['--expose-gc', '--import', join(benchDir, 'heap-probe.mjs')];
      // The stampede's requests come at once: the listener holds them all below its cap (one
      // address may open as many as it needs while there is room: `npm run bench:flood`).
      const connections = String(Math.max(4096, settings.stampedeRequests + 64));
      const extraEnv = { MAX_CONNECTIONS: connections };
      const fresh = await startBff('bff-fresh', sim.baseUrl, { nodeArgs: probeArgs, ipc: true, extraEnv });
      servers.push(fresh);
      if (wants('stampede')) results.stampede = await runStampede(run, fresh);
      if (wants('scan')) results.slugScan = await runSlugScan(run, fresh);
    }
    if (wants('stale')) results.stale = await runStaleServe(run);
    if (wants('archive-scale')) results.archiveScale = await runArchiveScale();
    if (wants('search')) results.search = await runSearch();
    if (wants('bombing')) results.bombing = await runBombing(run);
  } finally {
    agent.destroy();
    for (const server of servers.splice(0)) await stopChild(server.child);
    await sim.close();
  }

  results.meta.totalSeconds = (performance.now() - t0) / 1000;
  results.targets = evaluateTargets(results);
  report(results);
  if (results.archiveScale) say(`\n${reportArchiveScale(results.archiveScale).join('\n')}`);
  if (results.search) say(`\n${reportSearch(results.search).join('\n')}`);
  const outDir = join(benchDir, 'results');
  mkdirSync(outDir, { recursive: true });
  writeFileSync(join(outDir, 'latest.json'), `${JSON.stringify(results, null, 2)}\n`);
  say(`\nJSON: bench/results/latest.json   (${results.meta.totalSeconds.toFixed(0)} s)`);
}

main().catch(async (error) => {
  process.stderr.write(`bench failed: ${error?.stack ?? error}\n`);
  killAll('SIGKILL');
  process.exitCode = 1;
});
