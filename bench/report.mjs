// What a bench run prints: the targets evaluated from the results, then the tables and lines.
import { fmtInt, fmtMiB, fmtMs, pad, say, table } from './lib/stats.mjs';

const fmtRatio = (n) => (Number.isFinite(n) ? `${n.toFixed(2)}×` : '-');
/** A median ratio with its range: `1.12× (1.08–1.19)`. */
const fmtSpread = ({ medianRatio, min, max }) => `${fmtRatio(medianRatio)} (${min.toFixed(2)}–${max.toFixed(2)})`;

export function evaluateTargets(results) {
  const targets = [];
  for (const r of results.bombing?.runs ?? []) {
    targets.push({
      target: `bombing (${r.label}): ≤ 30 bot addresses forwarded at 20/min`,
      value: String(r.botAddressesForwarded),
      met: r.botAddressesForwarded <= 30,
    });
    if (r.withToken) {
      targets.push({
        target: `bombing (${r.label}): a visitor with a valid token always passes`,
        value: `${r.visitor.succeeded}/${r.visitor.attempts}`,
        met: r.visitor.succeeded === r.visitor.attempts,
      });
    }
  }
  for (const c of results.cached ?? []) {
    targets.push({ target: `${c.scenario}: ≥ 0.9× baseline`, value: `${c.medianRatio.toFixed(2)}×`, met: c.medianRatio >= 0.9 });
    targets.push({
      target: `${c.scenario}: ≥ 0.9× baseline with the same headers`,
      value: `${c.medianSameHeadersRatio.toFixed(2)}×`,
      met: c.medianSameHeadersRatio >= 0.9,
    });
    if (c.nginx) {
      targets.push({
        target: `${c.scenario}: ≥ 0.6× nginx proxy_cache (stretch)`,
        value: `${c.medianNginxRatio.toFixed(2)}×`,
        met: c.medianNginxRatio >= 0.6,
      });
    }
    // Judged on the paired runs when there are some: the rounds' CPU ratio moves with the machine.
    const cpu = c.pairedCpu
      ? {
          ratio: c.pairedCpu.medianRatio,
          how:
            `paired, ${fmtRatio(c.pairedCpu.min)}–${fmtRatio(c.pairedCpu.max)} over ${c.pairedCpu.runs.length} runs` +
            (c.pairedCpu.sameHeaders ? `; ${fmtRatio(c.pairedCpu.sameHeaders.medianRatio)} of bare Hono with the same headers` : ''),
        }
      : {
          ratio: c.medianCpuRatios.baseline,
          how: `${fmtMs(c.ours.serverCpuUsPerRequest, 1)} / ${fmtMs(c.baseline.serverCpuUsPerRequest, 1)} µs`,
        };
    targets.push({
      target: `${c.scenario}: CPU/request ≤ 1.25× bare Hono's (≥ 0.8× its requests per CPU second)`,
      value: `${fmtRatio(cpu.ratio)} (${cpu.how})`,
      met: cpu.ratio <= 1.25,
    });
    if (c.nginx) {
      targets.push({
        target: `${c.scenario}: CPU/request ≤ 1.5× nginx proxy_cache's`,
        value: `${fmtRatio(c.medianCpuRatios.nginx)} (${fmtMs(c.ours.serverCpuUsPerRequest, 1)} / ${fmtMs(c.nginx.serverCpuUsPerRequest, 1)} µs)`,
        met: c.medianCpuRatios.nginx <= 1.5,
      });
    }
    targets.push({
      target: `${c.scenario}: p99 ≤ 5 ms at ${results.meta.settings.connections} connections`,
      value: `${fmtMs(c.ours.p99Ms)} ms`,
      met: c.ours.p99Ms <= 5,
    });
  }
  // A page of one issue does no more work than a page of the archive: it must cost no more.
  const cpuRatioOf = (id) => {
    const c = results.cached?.find((scenario) => scenario.id === id);
    return c && (c.pairedCpu?.medianRatio ?? c.medianCpuRatios.baseline);
  };
  const [archiveRatio, slugRatio] = [cpuRatioOf('issues'), cpuRatioOf('slug')];
  if (archiveRatio !== undefined && slugRatio !== undefined) {
    targets.push({
      target: "GET /api/issues/:slug: CPU/request vs bare Hono no more than the archive page's (within 5%, what paired runs move by)",
      value: `${fmtRatio(slugRatio)} vs ${fmtRatio(archiveRatio)}`,
      met: slugRatio <= archiveRatio * 1.05,
    });
  }
  if (results.stampede) {
    targets.push({
      target: 'stampede → 1 upstream call',
      value: String(results.stampede.upstreamCalls),
      met: results.stampede.upstreamCalls === 1,
    });
  }
  if (results.slugScan) {
    const s = results.slugScan;
    targets.push({
      target: 'slug scan: heap growth ≤ CACHE_MAX_BYTES + 32 MB',
      value: `${s.heapUsedMiB.growth.toFixed(1)} MiB (RSS ${s.rssMiB.growth.toFixed(1)} MiB)`,
      met: s.heapUsedMiB.growth <= s.heapBudgetMiB,
    });
    targets.push({
      target: 'slug scan: ≤ 1 upstream call per distinct slug',
      value: `${s.upstreamCalls} calls / ${s.slugs} slugs`,
      met: s.upstreamCalls <= s.slugs && s.repeatOfLastSlugs.upstreamCalls === 0,
    });
  }
  if (results.stale) {
    targets.push({
      target: 'stale serve < 5 ms (p99, measured at the client)',
      value: `p50 ${fmtMs(results.stale.p50Ms)} ms, p99 ${fmtMs(results.stale.p99Ms)} ms, max ${fmtMs(results.stale.maxMs)} ms`,
      met: results.stale.p99Ms < 5,
    });
  }
  return targets;
}

export function report(results) {
  const { meta } = results;
  const s = meta.settings;
  say('');
  say(`newsletter-bff bench — ${meta.date}`);
  say(`Node ${meta.node} (V8 ${meta.v8}), ${meta.platform}, ${meta.cpuCount} × ${meta.cpuModel}`);
  say(
    meta.pinned
      ? `server pinned to CPU ${meta.pinned.server}; load generator (${meta.loadTool}) and upstream simulator on CPU ${meta.pinned.loadGeneratorAndSimulator}`
      : `not pinned (taskset missing, BENCH_NO_PIN or < 2 CPUs); load generator: ${meta.loadTool}`,
  );
  if (meta.backgroundBusyPctBefore > 10) {
    say(
      `warning: before the run, other processes used ${meta.backgroundBusyPctBefore.toFixed(0)}% of the machine's CPU: figures are noisy`,
    );
  }
  if (s.entry !== 'dist/cli.js') say(`entry: ${s.entry}`);
  if (s.nodeArgs.length) say(`BFF node flags: ${s.nodeArgs.join(' ')}`);
  say(
    `settings: ${s.pairs} pairs × ${s.durationSec} s, ${s.connections} connections, warm-up ${s.warmupSec} s, upstream latency ${s.upstreamLatencyMs} ms, ` +
      `archive ${s.archive.issues} issues / ${s.archive.categories} categories / ${s.archive.contentBytes} B contentHtml`,
  );

  if (results.cached?.length) {
    say('');
    say(
      `Cached reads — ours = ${s.entry} (${s.demo ? 'demo mode, its sample publication' : 'NODE_ENV=production'}), against two bare Hono apps on @hono/node-server answering the same body from a constant:`,
    );
    say('  base = with Content-Type only; same-hdr = with every header ours sends.');
    if (meta.nginx)
      say(`  nginx = ${meta.nginx.version}, proxy_cache, one process, in front of same-hdr: every measured request is a cache hit.`);
    say(`Each round runs base, same-hdr, ${meta.nginx ? 'nginx, ' : ''}ours in turn, starting one side later than the round before.`);
    say('req/s: median of rounds; p50/p99 (ms): pooled over rounds; ratio: median of per-round ours/reference req/s;');
    const sideNames = meta.nginx ? 'base/same-hdr/nginx/ours' : 'base/same-hdr/ours';
    say(
      `µs CPU/req: server CPU time per answered request (/proc utime+stime), ${sideNames}; CPU vs: median of per-round ours/reference µs CPU/req;`,
    );
    say(
      'paired CPU vs base, vs same-hdr: median (min–max) of ours/reference µs CPU/req, ours, base and same-hdr loaded at the same time on the server core with a third of the connections each,',
    );
    say("  all scenarios' paired runs back to back before any round (no server idles before them);");
    say('srv CPU: % of one core during the run');
    const sidesOf = (c) => [c.baseline, c.sameHeaders, ...(c.nginx ? [c.nginx] : []), c.ours];
    const rows = results.cached.map((c) => [
      c.scenario,
      c.bodyBytes ? `${(c.bodyBytes / 1024).toFixed(1)} KB` : '0',
      fmtInt(c.baseline.rpsMedian),
      fmtMs(c.baseline.p99Ms),
      fmtInt(c.sameHeaders.rpsMedian),
      ...(meta.nginx ? [fmtInt(c.nginx.rpsMedian)] : []),
      fmtInt(c.ours.rpsMedian),
      fmtMs(c.ours.p50Ms),
      fmtMs(c.ours.p99Ms),
      `${c.ours.errors}/${c.ours.unexpected}`,
      `${c.medianRatio.toFixed(2)}×`,
      `${c.medianSameHeadersRatio.toFixed(2)}×`,
      ...(meta.nginx ? [`${c.medianNginxRatio.toFixed(2)}×`] : []),
      sidesOf(c)
        .map((side) => fmtMs(side.serverCpuUsPerRequest, 1))
        .join('/'),
      fmtRatio(c.medianCpuRatios.baseline),
      c.pairedCpu ? fmtSpread(c.pairedCpu) : '-',
      c.pairedCpu?.sameHeaders ? fmtSpread(c.pairedCpu.sameHeaders) : '-',
      ...(meta.nginx ? [fmtRatio(c.medianCpuRatios.nginx)] : []),
      `${sidesOf(c)
        .map((side) => fmtInt(side.serverCpuPct))
        .join('/')}%`,
    ]);
    const headers = [
      'scenario',
      'body',
      'base req/s',
      'p99',
      'same-hdr req/s',
      ...(meta.nginx ? ['nginx req/s'] : []),
      'ours req/s',
      'p50',
      'p99',
    ];
    headers.push(
      'err/non-2xx',
      'vs base',
      'vs same-hdr',
      ...(meta.nginx ? ['vs nginx'] : []),
      'µs CPU/req',
      'CPU vs base',
      'paired CPU vs base',
      'paired CPU vs same-hdr',
      ...(meta.nginx ? ['CPU vs nginx'] : []),
      'srv CPU',
    );
    say(
      table(
        headers,
        rows,
        headers.map((_, i) => i > 0),
      ),
    );
    const unsaturated = results.cached.filter((c) => c.baseline.serverCpuPct < 90);
    if (unsaturated.length) {
      const loadBound = unsaturated.filter((c) => c.baseline.loadCpuPct >= 80);
      say(
        `note: the baseline server used < 90% of its core in ${unsaturated.map((c) => c.id).join(', ')}` +
          (loadBound.length
            ? `; the load generator was near a full core in ${loadBound.map((c) => c.id).join(', ')}, so it may be the limit there, which pulls ratios towards 1${meta.loadTool === 'autocannon' ? ' (try BENCH_TOOL=wrk)' : ''}.`
            : '; other processes on this machine probably competed for the CPU.'),
      );
    }
    const bytes = results.cached[0];
    say(
      `response size incl. headers (${bytes.scenario}): ours ${fmtInt(bytes.ours.bytesPerResponse)} B (${bytes.responseHeaderNames.ours.length} headers), ` +
        `baseline ${fmtInt(bytes.baseline.bytesPerResponse)} B (${bytes.responseHeaderNames.baseline.length} headers)`,
    );
  }

  if (results.subscribe) {
    const r = results.subscribe;
    say('');
    say(`POST /api/subscribe — ${r.connections} connections, simulated upstream ${r.simulatedLatencyMs} ms; ${r.emails}`);
    say(
      table(
        [
          'scenario',
          'req/s',
          'p50',
          'p99',
          'err/non-2xx',
          'upstream calls',
          'p50 − latency',
          'p50 − direct p50',
          'p99 − direct p99',
          'CPU/req',
        ],
        [
          [
            'POST /api/subscribe',
            fmtInt(r.rps),
            fmtMs(r.p50Ms),
            fmtMs(r.p99Ms),
            `${r.errors}/${r.unexpected}`,
            `${fmtInt(r.upstreamCalls)} / ${fmtInt(r.requests)} req`,
            `${fmtMs(r.overheadP50Ms)} ms`,
            `${fmtMs(r.overheadOverDirectP50Ms)} ms`,
            `${fmtMs(r.overheadOverDirectP99Ms)} ms`,
            `${fmtMs(r.serverCpuUsPerRequest, 0)} µs`,
          ],
          [
            '(direct to the simulator)',
            fmtInt(r.directUpstream.rps),
            fmtMs(r.directUpstream.p50Ms),
            fmtMs(r.directUpstream.p99Ms),
            '',
            '',
            '',
            '',
            '',
            '',
          ],
        ],
        [false, true, true, true, true, true, true, true, true, true],
      ),
    );
  }

  if (results.bombing) {
    say('');
    say('Subscription bombing (docs/subscribe.md "Surges"): distinct addresses from rotating IPs, a real visitor every 2 s');
    say(
      table(
        [
          'run',
          'posted',
          'forwarded upstream: bots + visitor',
          "bots' answers (status code: count)",
          'surge started',
          'surge ended',
          'visitor ok',
          'visitor p50 / max',
        ],
        results.bombing.runs.map((r) => [
          r.label,
          `${fmtInt(r.bots)} from ${fmtInt(r.ips)} IPs in ${r.seconds} s`,
          `${fmtInt(r.botAddressesForwarded)} + ${fmtInt(r.visitor.succeeded)} (threshold ${r.thresholdPerMinute}/min)`,
          Object.entries(r.answers)
            .map(([key, count]) => `${key}: ${count}`)
            .join(', '),
          r.surgeStartedAtSec === undefined
            ? 'never'
            : `${r.surgeStartedAtSec.toFixed(1)} s (${r.surgeStart.ratePerMinute}/min, ${r.surgeStart.distinctIps} IPs, ${r.surgeStart.distinctDomains} domains)`,
          r.surgeEndedAtSec === undefined
            ? 'not yet'
            : `${r.surgeEndedAtSec.toFixed(1)} s (hold ${r.holdSeconds} s; ${r.surgeEnd.challenged} challenged, ${r.surgeEnd.paused} paused)`,
          `${r.visitor.succeeded}/${r.visitor.attempts}${r.visitor.challenged ? ` (${r.visitor.challenged} challenged)` : ''}`,
          `${fmtMs(r.visitor.p50Ms, 1)} / ${fmtMs(r.visitor.maxMs, 1)} ms`,
        ]),
        [false, false, true, false, false, false, true, true],
      ),
    );
  }

  const lines = [];
  if (results.stampede) {
    const r = results.stampede;
    lines.push([
      'stampede',
      `${r.requests} concurrent cold requests for one slug → ${r.upstreamCalls} upstream call(s); statuses ${JSON.stringify(r.statuses)}, ` +
        `X-Cache ${JSON.stringify(r.cacheStates)}; upstream ${r.upstreamLatencyMs} ms; p50 ${fmtMs(r.p50Ms, 0)} ms, slowest ${fmtMs(r.maxMs, 0)} ms`,
    ]);
  }
  if (results.slugScan) {
    const r = results.slugScan;
    lines.push([
      'slug scan',
      `${fmtInt(r.slugs)} distinct unknown slugs${r.stoppedByTimeCap ? ` (of ${fmtInt(r.slugsPlanned)}: time cap)` : ''} → ${fmtInt(r.upstreamCalls)} upstream calls; ` +
        `${fmtInt(r.rps)} req/s, ${fmtInt(r.serverCpuUsPerRequest)} µs server CPU per miss, ${JSON.stringify(r.statuses)}`,
    ]);
    lines.push([
      '',
      `heapUsed after gc ${fmtMiB(r.heapUsedMiB.before)} → ${fmtMiB(r.heapUsedMiB.after)} (${r.heapUsedMiB.growth >= 0 ? '+' : ''}${r.heapUsedMiB.growth.toFixed(1)}); ` +
        `RSS ${fmtMiB(r.rssMiB.before)} → ${fmtMiB(r.rssMiB.after)} (peak ${fmtMiB(r.rssMiB.peak)}); ` +
        `the last ${fmtInt(r.repeatOfLastSlugs.slugs)} slugs again → ${r.repeatOfLastSlugs.upstreamCalls} upstream calls`,
    ]);
  }
  if (results.stale) {
    const r = results.stale;
    lines.push([
      'stale serve',
      `TTL 1 s, upstream ${r.upstreamLatencyMs} ms: ${r.staleResponses} × STALE; client-side p50 ${fmtMs(r.p50Ms, 3)} ms, p99 ${fmtMs(r.p99Ms, 3)} ms, max ${fmtMs(r.maxMs, 3)} ms` +
        (r.serverSide
          ? `; server-side (access log) p50 ${fmtMs(r.serverSide.p50Ms, 1)}, p99 ${fmtMs(r.serverSide.p99Ms, 1)}, max ${fmtMs(r.serverSide.maxMs, 1)} ms`
          : ''),
    ]);
    lines.push([
      '',
      `other answers ${JSON.stringify(r.otherResponses)}; upstream calls meanwhile (background refreshes) ${JSON.stringify(r.upstreamCallsDuringWindow)}`,
    ]);
  }
  if (lines.length) {
    say('');
    say('Cache behaviour');
    for (const [name, text] of lines) say(`  ${pad(name, 12)}${text}`);
  }

  if (meta.oursAccessLog) {
    say('');
    say(
      `${
        meta.oursAccessLog.sink === 'null'
          ? 'BFF stdout (access log) went to /dev/null; '
          : `BFF stdout (access log) during the run: ${fmtInt(meta.oursAccessLog.lines)} lines, ${fmtInt(meta.oursAccessLog.bytes)} bytes (${
              meta.oursAccessLog.sink === 'file' ? 'written to a file, counted afterwards' : 'piped to the bench and counted'
            }); `
      }RSS ${fmtMiB(meta.oursStartRssMiB)} at start → ${fmtMiB(meta.oursEndRss?.rssMiB)} at end`,
    );
  }

  if (meta.tickNs) {
    const { start, afterPaired = {}, after } = meta.tickNs;
    // In the order the scenarios ran: an object lists a key like `304` before the others.
    const ids = results.cached.map((scenario) => scenario.id);
    const probes = [
      ...ids.filter((id) => afterPaired[id] !== undefined).map((id) => ({ when: `${id}'s paired runs`, ns: afterPaired[id] })),
      ...ids.filter((id) => after[id] !== undefined).map((id) => ({ when: `${id}'s rounds`, ns: after[id] })),
    ];
    const names = { ours: 'ours', baseline: 'base', sameHeaders: 'same-hdr' };
    const row = (ns) =>
      Object.entries(names)
        .map(([side, name]) => `${name} ${ns[side]}`)
        .join(', ');
    say('');
    say('process.nextTick, ns a call in each server (bench/lib/tick-probe.cjs):');
    say(`  after the warm-up: ${row(start)}`);
    for (const probe of probes) say(`  after ${probe.when}: ${row(probe.ns)}`);
    // A process times 60–260 ns on its fast path and 350–820 ns off it, so a figure that more than
    // doubled says the process left the fast path before that probe.
    const left = Object.keys(names).flatMap((side) => {
      const probe = probes.find((p) => p.ns[side] > 2 * start[side]);
      return probe === undefined ? [] : [`${names[side]} (by the end of ${probe.when})`];
    });
    if (left.length) {
      say(
        `  Off V8's fast path for process.nextTick during the run: ${left.join(', ')}. Node's cost after an idle spell ` +
          `(docs/node-http.md, "process.nextTick after an idle spell"): from then on each request cost that server more, for reasons that are not its code.`,
      );
    }
  }

  if (results.targets.length) {
    say('');
    say('Targets');
    say(
      table(
        ['target', 'measured', 'met'],
        results.targets.map((t) => [t.target, t.value, t.met ? 'yes' : 'NO']),
        [false, true, false],
      ),
    );
  }
}
