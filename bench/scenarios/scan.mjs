// Slug scan: distinct unknown slugs must cost at most one upstream call each and keep the heap
// within the cache's memory bound; the last ones asked again must cost none. The archive is read
// first, as a live site's visitors read it: with its complete index a made-up slug is a 404
// without an upstream call. (A BFF with no index yet reads each slug from the upstream, up to
// READ_BUDGET_PER_MINUTE, at most 100,000, which a scan at this speed outruns: the rest are 503s.)
import { get } from '../lib/http.mjs';
import { probeMemory, procStatus, runLoad } from '../lib/processes.mjs';
import { settings } from '../lib/settings.mjs';
import { progress } from '../lib/stats.mjs';

/** `settings.scanSlugs` distinct unknown slugs on `fresh` (started with the heap probe preloaded). */
export async function runSlugScan({ sim, agent }, fresh) {
  const n = settings.scanSlugs;
  progress(
    `slug scan: ${n.toLocaleString('en-US')} distinct unknown slugs (upstream ${settings.scanLatencyMs} ms, ${settings.scanConnections} connections)`,
  );
  sim.setLatency(settings.scanLatencyMs);
  const prefix = `no-such-issue-${process.pid}`;
  const archive = await get(agent, `${fresh.url}/api/issues`);
  if (archive.status !== 200) throw new Error(`slug scan: the archive answered ${archive.status}`);
  const memBefore = await probeMemory(fresh);
  const procBefore = procStatus(fresh.pid);
  const callsBefore = sim.unknownSlugCalls;
  const scan = await runLoad({
    url: `${fresh.url}/api/issues/`,
    uniqueSlugs: { prefix },
    amount: n,
    maxSeconds: settings.scanMaxSeconds,
    connections: settings.scanConnections,
    warmupSec: 0,
    durationSec: 0,
    expectStatus: 404,
    serverPid: fresh.pid,
  });
  const upstreamCalls = sim.unknownSlugCalls - callsBefore;
  const scanned = scan.sent ?? n;
  const procAfter = procStatus(fresh.pid);
  const memAfter = await probeMemory(fresh);
  // Recent slugs again (the newest 100 skipped: their answers may still have been in flight
  // when the load generator stopped): they should be answered from the 404 cache.
  const repeatLast = Math.max(0, scan.requests - 100);
  const repeatFirst = Math.max(1, repeatLast - 999);
  const repeatCount = Math.max(0, repeatLast - repeatFirst + 1);
  const repeatBefore = sim.unknownSlugCalls;
  for (let i = repeatFirst; i <= repeatLast; i += 50) {
    const batch = [];
    for (let j = i; j <= Math.min(i + 49, repeatLast); j += 1) batch.push(get(agent, `${fresh.url}/api/issues/${prefix}-${j}`));
    await Promise.all(batch);
  }
  sim.setLatency(settings.upstreamLatencyMs);
  const MiB = 2 ** 20;
  return {
    slugs: scanned,
    slugsPlanned: n,
    stoppedByTimeCap: scanned < n,
    requestsAnswered: scan.requests,
    statuses: scan.statuses,
    errors: scan.errors,
    seconds: scan.seconds,
    serverCpuPct: scan.serverCpuPct,
    serverCpuUsPerRequest: scan.serverCpuUsPerRequest,
    loadCpuPct: scan.loadCpuPct,
    rps: scan.rps,
    upstreamCalls,
    upstreamCallsPerDistinctSlug: upstreamCalls / scanned,
    repeatOfLastSlugs: { slugs: repeatCount, upstreamCalls: sim.unknownSlugCalls - repeatBefore },
    heapUsedMiB: {
      before: memBefore.heapUsed / MiB,
      after: memAfter.heapUsed / MiB,
      growth: (memAfter.heapUsed - memBefore.heapUsed) / MiB,
    },
    heapTotalMiB: { before: memBefore.heapTotal / MiB, after: memAfter.heapTotal / MiB },
    externalMiB: { before: memBefore.external / MiB, after: memAfter.external / MiB },
    arrayBuffersMiB: { before: memBefore.arrayBuffers / MiB, after: memAfter.arrayBuffers / MiB },
    rssMiB: { before: procBefore.rssMiB, after: procAfter.rssMiB, growth: procAfter.rssMiB - procBefore.rssMiB, peak: procAfter.hwmMiB },
    gcBeforeHeapReading: memAfter.gcExposed,
    cacheMaxBytesMiB: 64,
    heapBudgetMiB: 64 + 32,
    memorySource:
      'heapUsed: process.memoryUsage() after gc(), via the bench/heap-probe.mjs preload over IPC; RSS: /proc/<pid>/status VmRSS (peak: VmHWM)',
  };
}
