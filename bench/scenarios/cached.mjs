// The cached reads (issues, deep, slug, categories, 304): ours against the references — bare Hono
// with Content-Type only, bare Hono with every header ours sends, and nginx proxy_cache when
// installed — after checking that all of them answer the same bytes: first the paired CPU runs of
// every scenario, then each scenario's alternating rounds.
import { spawnSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { get, headersToReplay } from '../lib/http.mjs';
import { freePort, probeTicks, profArgs, runLoad, startNginx, startServerProcess, TICK_PROBE_ARGS } from '../lib/processes.mjs';
import { benchDir, env, HOST, nginxPath, settings } from '../lib/settings.mjs';
import { median, progress, stripHistogram, summarizeSide } from '../lib/stats.mjs';

/** The five cached scenarios, in the order they run; `newest` is the newest issue's slug. */
export function cachedScenarioList(newest) {
  return [
    { id: 'issues', name: 'GET /api/issues (default page)', path: '/api/issues' },
    { id: 'deep', name: 'GET /api/issues deep page', path: '/api/issues?offset=200&limit=50' },
    { id: 'slug', name: 'GET /api/issues/:slug', path: `/api/issues/${newest}` },
    { id: 'categories', name: 'GET /api/categories', path: '/api/categories' },
    { id: '304', name: 'GET /api/issues/:slug → 304', path: `/api/issues/${newest}`, revalidate: true },
  ];
}

/**
 * Measures `scenarios` on `ours` (already started) against the references, filling
 * `results.cached` and the call counts in `results.meta`.
 */
export async function runCachedScenarios({ sim, agent, servers, results }, ours, scenarios) {
  const { responses, responsesWithHeaders } = await warmOurs(agent, ours, scenarios);
  results.meta.callsAfterWarmUp = sim.counts();
  const baseline = await startBaseline(servers, 'baseline', responses);
  const sameHeaders = await startBaseline(servers, 'baseline-same-headers', responsesWithHeaders);
  let nginx;
  if (nginxPath) {
    nginx = await startNginxReference(agent, servers, sameHeaders, scenarios);
    results.meta.nginx = { binary: nginxPath, version: spawnSync(nginxPath, ['-v'], { encoding: 'utf8' }).stderr.trim() };
  }
  await checkSameAnswers(agent, ours, baseline, [baseline, sameHeaders, ...(nginx ? [nginx] : [])], scenarios);

  // A process.nextTick in each Node server, after the warm-up and after each phase of each
  // scenario: one whose ticks went off V8's fast path after an idle spell costs more for reasons
  // that are Node's (docs/node-http.md).
  const probeAll = async () => ({
    ours: await probeTicks(ours),
    baseline: await probeTicks(baseline),
    sameHeaders: await probeTicks(sameHeaders),
  });
  results.meta.tickNs = { start: await probeAll(), afterPaired: {}, after: {} };
  // The paired CPU runs of every scenario come first, back to back: all three Node servers are
  // loaded together the whole time, so none has an idle spell before its judged figures. The
  // rounds, where each server waits while the others are loaded, come after (docs/performance.md
  // "Method").
  const paired = {};
  for (const scenario of scenarios) {
    paired[scenario.id] = await measurePairedCpu(scenario, { baseline, sameHeaders, ours });
    results.meta.tickNs.afterPaired[scenario.id] = await probeAll();
  }
  results.cached = [];
  for (const scenario of scenarios) {
    results.cached.push(await measureCachedScenario(scenario, { baseline, sameHeaders, nginx, ours }, paired[scenario.id]));
    results.meta.tickNs.after[scenario.id] = await probeAll();
  }
  results.meta.callsAfterCachedScenarios = sim.counts();
}

/** Warms every path on ours; what it answers becomes the baselines' constants. */
async function warmOurs(agent, ours, scenarios) {
  const responses = {};
  const responsesWithHeaders = {};
  for (const scenario of scenarios) {
    const first = await get(agent, ours.url + scenario.path);
    const second = await get(agent, ours.url + scenario.path);
    if (first.status !== 200 || second.status !== 200) {
      throw new Error(`warm-up of ${scenario.path} answered ${first.status}/${second.status}: ${second.body.slice(0, 200)}`);
    }
    if (second.headers['x-cache'] !== 'HIT') throw new Error(`${scenario.path} is not cached (X-Cache: ${second.headers['x-cache']})`);
    scenario.bodyBytes = Buffer.byteLength(second.body);
    scenario.etag = second.headers.etag;
    scenario.oursHeaderCount = Object.keys(second.headers).length;
    const allHeaders = headersToReplay(second.headers);
    const etag = responses[scenario.path]?.etag || scenario.revalidate ? { etag: second.headers.etag } : {};
    responses[scenario.path] = { body: second.body, contentType: second.headers['content-type'], ...etag };
    responsesWithHeaders[scenario.path] = { ...responses[scenario.path], headers: allHeaders };
    if (scenario.revalidate) {
      const revalidated = await get(agent, ours.url + scenario.path, { headers: { 'If-None-Match': scenario.etag } });
      if (revalidated.status !== 304) throw new Error(`If-None-Match on ${scenario.path} answered ${revalidated.status}, not 304`);
    }
  }
  return { responses, responsesWithHeaders };
}

/**
 * A bare-Hono baseline (bench/baseline-server.mjs) answering `constants`, one body per path, with
 * bench/lib/tick-probe.cjs loaded; `nodeArgs` and `extraEnv` are added to its own.
 */
export async function startBaseline(servers, name, constants, { nodeArgs = [], extraEnv = {} } = {}) {
  const file = join(tmpdir(), `newsletter-bff-bench-${name}-${process.pid}.json`);
  let server;
  try {
    writeFileSync(file, JSON.stringify(constants));
    server = await startServerProcess({
      name,
      nodeArgs: [...TICK_PROBE_ARGS, ...profArgs(name), ...nodeArgs],
      script: join(benchDir, 'baseline-server.mjs'),
      scriptArgs: [file],
      env: { PATH: env.PATH ?? '', NODE_ENV: 'production', PORT: String(await freePort()), HOST, ...extraEnv },
    });
  } finally {
    rmSync(file, { force: true });
  }
  servers.push(server);
  return server;
}

/** nginx proxy_cache in front of the same-headers baseline, with every path already cached. */
async function startNginxReference(agent, servers, sameHeaders, scenarios) {
  progress(`starting nginx proxy_cache (${nginxPath}) in front of the same-headers baseline`);
  const nginx = await startNginx(sameHeaders.url);
  servers.push(nginx);
  for (const scenario of scenarios) {
    await get(agent, nginx.url + scenario.path);
    const second = await get(agent, nginx.url + scenario.path);
    if (second.headers['x-cache'] !== 'HIT')
      throw new Error(`nginx does not cache ${scenario.path} (X-Cache: ${second.headers['x-cache']})`);
  }
  return nginx;
}

/** Same bytes, same Content-Type: checked, not assumed. */
async function checkSameAnswers(agent, ours, baseline, references, scenarios) {
  for (const scenario of scenarios) {
    const headers = scenario.revalidate ? { 'If-None-Match': scenario.etag } : {};
    const a = await get(agent, ours.url + scenario.path, { headers });
    for (const server of references) {
      const b = await get(agent, server.url + scenario.path, { headers });
      if (a.status !== b.status || a.body !== b.body || a.headers['content-type'] !== b.headers['content-type']) {
        throw new Error(`${server.name} does not answer ${scenario.path} like the BFF (${a.status}/${b.status})`);
      }
      if (server === baseline) scenario.baselineResponseHeaderNames = Object.keys(b.headers);
    }
    scenario.oursResponseHeaderNames = Object.keys(a.headers);
  }
}

/** A load of `server` for `scenario`: its path, its request headers and the status it must answer. */
function loadFor(scenario) {
  return (server, options) =>
    runLoad({
      tool: settings.tool,
      url: server.url + scenario.path,
      headers: scenario.revalidate ? { 'If-None-Match': scenario.etag } : {},
      expectStatus: scenario.revalidate ? 304 : 200,
      serverPid: server.pid,
      ...options,
    });
}

/**
 * CPU per request, ours and both bare Hono apps loaded at the same time on the server core, a
 * third of the connections each: whatever the machine does to one, it does to the others in the
 * same seconds, so their ratios hold where the rounds move by a third (docs/performance.md).
 * Against same-hdr, the header lines Node checks and writes are the same on both sides. One
 * unmeasured run first warms the scenario's code in all three; then `settings.cpuPairs` runs.
 */
async function measurePairedCpu(scenario, { baseline, sameHeaders, ours }) {
  const load = loadFor(scenario);
  const third = { connections: Math.max(1, Math.round(settings.connections / 3)), durationSec: settings.durationSec, warmupSec: 0 };
  const paired = [];
  if (settings.cpuPairs === 0) return paired;
  for (let pair = 0; pair <= settings.cpuPairs; pair += 1) {
    progress(`${scenario.name}: paired CPU ${pair === 0 ? 'warm-up' : `${pair}/${settings.cpuPairs}`}`);
    const [oursRun, baselineRun, sameHeadersRun] = await Promise.all([load(ours, third), load(baseline, third), load(sameHeaders, third)]);
    if (pair === 0) continue;
    const cpu = (run) => run.serverCpuUsPerRequest;
    paired.push({
      ours: cpu(oursRun),
      baseline: cpu(baselineRun),
      sameHeaders: cpu(sameHeadersRun),
      ratio: cpu(oursRun) / cpu(baselineRun),
      sameHeadersRatio: cpu(oursRun) / cpu(sameHeadersRun),
    });
  }
  return paired;
}

/**
 * `settings.pairs` rounds of base, same-hdr, nginx (when running) and ours, each round starting
 * one side later than the last (this machine's speed drifts over seconds: a fixed order would
 * always hand the same side the slower seconds), then their summaries and ratios, with the
 * scenario's `paired` CPU runs (measurePairedCpu).
 */
async function measureCachedScenario(scenario, { baseline, sameHeaders, nginx, ours }, paired) {
  const runs = { baseline: [], sameHeaders: [], ...(nginx ? { nginx: [] } : {}), ours: [] };
  const sides = [['baseline', baseline], ['sameHeaders', sameHeaders], ...(nginx ? [['nginx', nginx]] : []), ['ours', ours]];
  const load = loadFor(scenario);
  for (let pair = 0; pair < settings.pairs; pair += 1) {
    const shift = pair % sides.length;
    for (const [side, server] of [...sides.slice(shift), ...sides.slice(0, shift)]) {
      progress(`${scenario.name}: pair ${pair + 1}/${settings.pairs}, ${side}`);
      const warmupSec = pair === 0 ? settings.warmupSec : 0;
      runs[side].push(await load(server, { connections: settings.connections, durationSec: settings.durationSec, warmupSec }));
    }
  }
  const ratios = runs.ours.map((run, i) => run.rps / runs.baseline[i].rps);
  const sameHeadersRatios = runs.ours.map((run, i) => run.rps / runs.sameHeaders[i].rps);
  const nginxRatios = nginx ? runs.ours.map((run, i) => run.rps / runs.nginx[i].rps) : undefined;
  // Server CPU per request, ours over the reference's in the same round: what a request costs,
  // whatever else the shared machine was doing to the load generator.
  const cpuRatio = (reference) => runs.ours.map((run, i) => run.serverCpuUsPerRequest / reference[i].serverCpuUsPerRequest);
  const cpuRatios = {
    baseline: cpuRatio(runs.baseline),
    sameHeaders: cpuRatio(runs.sameHeaders),
    ...(nginx ? { nginx: cpuRatio(runs.nginx) } : {}),
  };
  return {
    id: scenario.id,
    scenario: scenario.name,
    path: scenario.path,
    requestHeaders: scenario.revalidate ? { 'If-None-Match': scenario.etag } : {},
    bodyBytes: scenario.revalidate ? 0 : scenario.bodyBytes,
    baseline: summarizeSide(runs.baseline),
    sameHeaders: summarizeSide(runs.sameHeaders),
    ours: summarizeSide(runs.ours),
    ratios,
    medianRatio: median(ratios),
    sameHeadersRatios,
    medianSameHeadersRatio: median(sameHeadersRatios),
    ...(nginx ? { nginx: summarizeSide(runs.nginx), nginxRatios, medianNginxRatio: median(nginxRatios) } : {}),
    cpuRatios,
    medianCpuRatios: Object.fromEntries(Object.entries(cpuRatios).map(([side, list]) => [side, median(list)])),
    pairedCpu: paired.length
      ? { runs: paired, ...spread(paired.map((p) => p.ratio)), sameHeaders: spread(paired.map((p) => p.sameHeadersRatio)) }
      : undefined,
    responseHeaderNames: { ours: scenario.oursResponseHeaderNames, baseline: scenario.baselineResponseHeaderNames },
    runs: Object.fromEntries(Object.entries(runs).map(([side, list]) => [side, list.map(stripHistogram)])),
  };
}

/** Median, least and most of some ratios. */
function spread(ratios) {
  return { medianRatio: median(ratios), min: Math.min(...ratios), max: Math.max(...ratios) };
}
