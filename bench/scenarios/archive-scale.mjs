// Archive scale: a publication of 1,000 fat issues (~150 KB a list row) behind an upstream that
// answers in 100 ms, read by the real Node entry at CACHE_TTL_SECONDS=2. Prints the cold first
// answer, the peak RSS, what refreshes cost the upstream while nothing changes (six TTLs of
// traffic, against a whole read), and how long a new issue takes to appear and an unpublished
// one to leave. Goals (printed with each run): cold ≤ 10 s,
// peak RSS ≤ 256 MiB, refreshes ≤ 10% of a whole read, new ≤ TTL + 3 s, gone ≤ resync + TTL.
// The upstream lists newest `sentAt` first and sends validators (ETag and Last-Modified), as one
// that allows head refreshes; its drafts are created before they are sent. Every wait is
// bounded; the upstream and the BFF are stopped at the end.
import { Agent } from 'node:http';
import { performance } from 'node:perf_hooks';
import { createArchive } from '../../build/test/support/fake-upstream/archive.js';
import { startFakeUpstreamServer } from '../../build/test/support/fake-upstream/server.js';
import { get } from '../lib/http.mjs';
import { procStatus, startBff, stopChild } from '../lib/processes.mjs';
import { API_KEY, settings } from '../lib/settings.mjs';
import { progress, sleep } from '../lib/stats.mjs';

const KIB = 1024;
const MIB = 1024 * 1024;
const TTL_SECONDS = 2;
const POLL_MS = 100;

/** Reads `url` every POLL_MS until `done(answer)` holds or `limitMs` passes; the seconds it took, or undefined. */
async function secondsUntil(agent, url, done, limitMs) {
  const started = performance.now();
  while (performance.now() - started < limitMs) {
    if (done(await get(agent, url))) return (performance.now() - started) / 1000;
    await sleep(POLL_MS);
  }
  return undefined;
}

/** Whether a 200 list answer names `slug`. */
const lists = (answer, slug) => answer.status === 200 && JSON.parse(answer.body).data.some((issue) => issue.slug === slug);

/** What the upstream has answered so far: calls and body bytes, over every operation. */
function served(sim) {
  const { unknownSlugCalls: _unknown, ...counts } = sim.counts();
  const sum = (values) => Object.values(values).reduce((total, value) => total + value, 0);
  return { calls: sum(counts), bytes: sum(sim.bytesServed()) };
}

export async function runArchiveScale() {
  const { issues, htmlKiB, jsonKiB, latencyMs, resyncSeconds } = settings.archiveScale;
  progress(`archive scale: ${issues} issues of ~${htmlKiB} + ${jsonKiB} KiB, upstream ${latencyMs} ms a call, TTL ${TTL_SECONDS} s, resync ${resyncSeconds} s`);
  const archive = createArchive({ issues, contentBytes: htmlKiB * KIB, jsonBytes: jsonKiB * KIB, draftLeads: true });
  const sim = await startFakeUpstreamServer({
    apiKey: API_KEY,
    latencyMs,
    publication: archive,
    maxHoldMs: 60_000,
    variant: { order: 'newest-sent', validators: 'both' },
  });
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  let bff;
  try {
    bff = await startBff('bff-archive', sim.baseUrl, {
      extraEnv: { CACHE_TTL_SECONDS: String(TTL_SECONDS), ARCHIVE_RESYNC_SECONDS: String(resyncSeconds) },
    });
    const list = `${bff.url}/api/issues?limit=100`;

    // Cold: the first answer needs the whole archive.
    const cold = await get(agent, list);
    if (cold.status !== 200) throw new Error(`archive scale: the cold archive answered ${cold.status}`);
    const fullRead = served(sim);

    // Six TTLs of traffic with nothing new: what keeping fresh costs.
    const steadyStarted = performance.now();
    while (performance.now() - steadyStarted < 6 * TTL_SECONDS * 1000) {
      const answer = await get(agent, list);
      if (answer.status !== 200) throw new Error(`archive scale: a steady read answered ${answer.status}`);
      await sleep(POLL_MS);
    }
    const after = served(sim);
    const steady = { calls: after.calls - fullRead.calls, bytes: after.bytes - fullRead.bytes };

    // A new issue, sent now.
    const newSlug = `archive-scale-new-${Date.now()}`;
    sim.publish(newSlug);
    const appeared = await secondsUntil(agent, list, (answer) => lists(answer, newSlug), (TTL_SECONDS + 30) * 1000);

    // The second newest issue taken off the website: it leaves at the next whole read.
    const victim = archive.issues[1].slug;
    sim.unpublish(victim);
    const limitMs = (resyncSeconds + TTL_SECONDS + 30) * 1000;
    const left = await secondsUntil(agent, list, (answer) => answer.status === 200 && !lists(answer, victim), limitMs);
    const bySlugGone = await secondsUntil(agent, `${bff.url}/api/issues/${victim}`, (answer) => answer.status === 404, limitMs);

    return {
      issues,
      rowKiB: htmlKiB + jsonKiB,
      latencyMs,
      ttlSeconds: TTL_SECONDS,
      resyncSeconds,
      coldMs: cold.ms,
      // The kernel's high-water mark of the process's resident memory, over the whole run.
      peakRssMiB: procStatus(bff.pid).hwmMiB,
      fullRead: { calls: fullRead.calls, mib: fullRead.bytes / MIB },
      steadySixTtls: { calls: steady.calls, mib: steady.bytes / MIB, shareOfFullRead: steady.bytes / fullRead.bytes },
      newIssueSeconds: appeared ?? null,
      unpublishedSeconds: left ?? null,
      unpublishedBySlugSeconds: bySlugGone ?? null,
    };
  } finally {
    agent.destroy();
    if (bff) await stopChild(bff.child);
    await sim.stop();
  }
}

/** The scenario's lines of the printed report, with each goal. */
export function reportArchiveScale(r) {
  const mark = (ok) => (ok ? 'ok' : 'MISSED');
  const seconds = (value) => (value === null ? 'never (within the wait)' : `${value.toFixed(1)} s`);
  return [
    `archive scale: ${r.issues} issues of ~${r.rowKiB} KiB, upstream ${r.latencyMs} ms a call, TTL ${r.ttlSeconds} s, ARCHIVE_RESYNC_SECONDS ${r.resyncSeconds}`,
    `  cold first answer            ${(r.coldMs / 1000).toFixed(1)} s  (goal ≤ 10 s: ${mark(r.coldMs <= 10_000)})`,
    `  peak RSS                     ${r.peakRssMiB.toFixed(0)} MiB  (goal ≤ 256 MiB: ${mark(r.peakRssMiB <= 256)})`,
    `  a whole read                 ${r.fullRead.calls} calls, ${r.fullRead.mib.toFixed(1)} MiB`,
    `  six TTLs, nothing new        ${r.steadySixTtls.calls} calls, ${r.steadySixTtls.mib.toFixed(2)} MiB = ${(100 * r.steadySixTtls.shareOfFullRead).toFixed(1)}% of a whole read (goal ≤ 10%: ${mark(r.steadySixTtls.shareOfFullRead <= 0.1)})`,
    `  a new issue appears after    ${seconds(r.newIssueSeconds)}  (goal ≤ TTL + 3 s: ${mark(r.newIssueSeconds !== null && r.newIssueSeconds <= r.ttlSeconds + 3)})`,
    `  an unpublished one leaves    ${seconds(r.unpublishedSeconds)}, its page (404) ${seconds(r.unpublishedBySlugSeconds)} later  (goal ≤ resync + TTL = ${r.resyncSeconds + r.ttlSeconds} s: ${mark(r.unpublishedSeconds !== null && r.unpublishedSeconds <= r.resyncSeconds + r.ttlSeconds)})`,
  ];
}
