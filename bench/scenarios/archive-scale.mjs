// Archive scale: a publication of 1,000 fat issues (~150 KB a list row) behind an upstream that
// answers in 100 ms, read by the real Node entry at CACHE_TTL_SECONDS=2. Prints the cold first
// answer, the peak RSS, what refreshes cost the upstream while nothing changes (six TTLs of
// traffic, against a whole read), and how long a new issue takes to appear and an unpublished
// one to leave. Goals (docs/deployment-workers.md and the README's archive figures): cold ≤ 10 s,
// peak RSS ≤ 256 MiB, refreshes ≤ 10% of a whole read, new ≤ TTL + 3 s, gone ≤ resync + TTL.
// Every wait is bounded; the upstream, the byte-counting proxy and the BFF are stopped at the end.
import { createServer, request as httpRequest } from 'node:http';
import { Agent } from 'node:http';
import { performance } from 'node:perf_hooks';
import { startUpstreamSim } from '../../dist/fake-upstream/bench-upstream.js';
import { get } from '../lib/http.mjs';
import { procStatus, startBff, stopChild } from '../lib/processes.mjs';
import { API_KEY, HOST, settings } from '../lib/settings.mjs';
import { progress, sleep } from '../lib/stats.mjs';
import { createArchive } from '../../dist/fake-upstream/archive.js';

const KIB = 1024;
const MIB = 1024 * 1024;
const TTL_SECONDS = 2;
const POLL_MS = 100;

/** A pass-through HTTP proxy to `target` that counts the upstream's calls and response bytes. */
async function startCountingProxy(target) {
  const counted = { calls: 0, bytes: 0 };
  const server = createServer((req, res) => {
    counted.calls += 1;
    const upstream = httpRequest(new URL(req.url, target), { method: req.method, headers: { ...req.headers, host: new URL(target).host } }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.on('data', (chunk) => {
        counted.bytes += chunk.length;
        res.write(chunk);
      });
      answer.on('end', () => res.end());
      answer.on('error', () => res.destroy());
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise((resolve) => server.listen(0, HOST, resolve));
  const { port } = server.address();
  return {
    url: `http://${HOST}:${port}${new URL(target).pathname}`,
    counted,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Reads `path` every POLL_MS until `done(body)` holds or `limitMs` passes; the seconds it took, or undefined. */
async function secondsUntil(agent, url, done, limitMs) {
  const started = performance.now();
  while (performance.now() - started < limitMs) {
    const answer = await get(agent, url);
    if (answer.status === 200 && done(JSON.parse(answer.body))) return (performance.now() - started) / 1000;
    await sleep(POLL_MS);
  }
  return undefined;
}

export async function runArchiveScale() {
  const { issues, rowKiB, latencyMs, resyncSeconds } = settings.archiveScale;
  progress(`archive scale: ${issues} issues of ~${rowKiB} KiB, upstream ${latencyMs} ms a call, TTL ${TTL_SECONDS} s, resync ${resyncSeconds} s`);
  const archive = createArchive({ issues, contentBytes: rowKiB * KIB });
  const sim = await startUpstreamSim({ latencyMs, apiKey: API_KEY, archive });
  const proxy = await startCountingProxy(sim.baseUrl);
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  let bff;
  try {
    bff = await startBff('bff-archive', proxy.url, {
      extraEnv: { CACHE_TTL_SECONDS: String(TTL_SECONDS), ARCHIVE_RESYNC_SECONDS: String(resyncSeconds) },
    });
    const list = `${bff.url}/api/issues?limit=100`;

    // Cold: the first answer needs the whole archive.
    const cold = await get(agent, list);
    if (cold.status !== 200) throw new Error(`archive scale: the cold archive answered ${cold.status}`);
    const fullRead = { ...proxy.counted };

    // Six TTLs of traffic with nothing new: what keeping fresh costs.
    const before = { ...proxy.counted };
    const steadyStarted = performance.now();
    let peakRss = procStatus(bff.pid).hwmMiB;
    while (performance.now() - steadyStarted < 6 * TTL_SECONDS * 1000) {
      const answer = await get(agent, list);
      if (answer.status !== 200) throw new Error(`archive scale: a steady read answered ${answer.status}`);
      await sleep(POLL_MS);
    }
    const steady = { calls: proxy.counted.calls - before.calls, bytes: proxy.counted.bytes - before.bytes };

    // A new issue at the head of the archive.
    const newSlug = `archive-scale-new-${Date.now()}`;
    sim.publish(newSlug);
    const appeared = await secondsUntil(agent, list, (body) => body.data.some((issue) => issue.slug === newSlug), (TTL_SECONDS + 30) * 1000);

    // The second newest issue unpublished (back to draft): it leaves at the next whole read.
    const victim = archive.issues[1];
    victim.status = 'draft';
    const left = await secondsUntil(agent, list, (body) => !body.data.some((issue) => issue.slug === victim.slug), (resyncSeconds + TTL_SECONDS + 30) * 1000);
    const victimAnswer = await get(agent, `${bff.url}/api/issues/${victim.slug}`);
    peakRss = Math.max(peakRss, procStatus(bff.pid).hwmMiB);

    return {
      issues,
      rowKiB,
      latencyMs,
      ttlSeconds: TTL_SECONDS,
      resyncSeconds,
      coldMs: cold.ms,
      peakRssMiB: peakRss,
      fullRead: { calls: fullRead.calls, mib: fullRead.bytes / MIB },
      steadySixTtls: { calls: steady.calls, mib: steady.bytes / MIB, shareOfFullRead: steady.bytes / fullRead.bytes },
      newIssueSeconds: appeared ?? null,
      unpublishedSeconds: left ?? null,
      unpublishedBySlugStatus: victimAnswer.status,
    };
  } finally {
    agent.destroy();
    if (bff) await stopChild(bff.child);
    await proxy.close();
    await sim.close();
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
    `  an unpublished one leaves    ${seconds(r.unpublishedSeconds)}, then by slug ${r.unpublishedBySlugStatus}  (goal ≤ resync + TTL = ${r.resyncSeconds + r.ttlSeconds} s: ${mark(r.unpublishedSeconds !== null && r.unpublishedSeconds <= r.resyncSeconds + r.ttlSeconds)})`,
  ];
}
