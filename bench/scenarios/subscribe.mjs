// POST /api/subscribe: the BFF's overhead over the simulated upstream latency, against the
// same load sent straight to the simulator. Every address is distinct, so none is deduplicated.
import { runLoad } from '../lib/processes.mjs';
import { API_KEY, settings } from '../lib/settings.mjs';
import { progress } from '../lib/stats.mjs';

/** Subscribe through `ours`, after the same requests straight to the simulator. */
export async function runSubscribe({ sim }, ours) {
  progress('POST /api/subscribe: direct upstream round trip, then through the BFF');
  const subscribeDuration = Math.min(settings.durationSec, 5);
  const direct = await runLoad({
    url: `${sim.baseUrl}/newsletter/subscribers`,
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${API_KEY}` },
    uniqueEmails: { prefix: `direct-${process.pid}` },
    connections: settings.subscribeConnections,
    durationSec: Math.min(3, subscribeDuration),
    warmupSec: 0,
    expectStatus: 201,
    serverPid: process.pid,
  });
  const before = sim.callsFor('POST /newsletter/subscribers');
  const viaBff = await runLoad({
    url: `${ours.url}/api/subscribe`,
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
    uniqueEmails: { prefix: `bench-${process.pid}-${Date.now()}` },
    connections: settings.subscribeConnections,
    durationSec: subscribeDuration,
    warmupSec: 0,
    expectStatus: 200,
    serverPid: ours.pid,
  });
  const upstreamCalls = sim.callsFor('POST /newsletter/subscribers') - before;
  return {
    emails: 'distinct per request (bench-<pid>-<time>-<n>@example.com), so none is deduped: every accepted request is one upstream call',
    simulatedLatencyMs: settings.upstreamLatencyMs,
    connections: settings.subscribeConnections,
    rps: viaBff.rps,
    p50Ms: viaBff.latency.p50,
    p99Ms: viaBff.latency.p99,
    errors: viaBff.errors,
    unexpected: viaBff.unexpected,
    statuses: viaBff.statuses,
    requests: viaBff.requests,
    upstreamCalls,
    overheadP50Ms: viaBff.latency.p50 - settings.upstreamLatencyMs,
    directUpstream: { p50Ms: direct.latency.p50, p99Ms: direct.latency.p99, rps: direct.rps, statuses: direct.statuses },
    overheadOverDirectP50Ms: viaBff.latency.p50 - direct.latency.p50,
    overheadOverDirectP99Ms: viaBff.latency.p99 - direct.latency.p99,
    serverCpuPct: viaBff.serverCpuPct,
    serverCpuUsPerRequest: viaBff.serverCpuUsPerRequest,
  };
}
