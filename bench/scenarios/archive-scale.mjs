// Archive scale: a publication of 1,000 fat issues (~150 KB a list row) behind an upstream that
// answers in 100 ms, read by the real Node entry at CACHE_TTL_SECONDS=2, with DEPLOY_HOOK_URL
// pointing at a local receiver. Run twice: the fake upstream listing newest `createdAt` first
// (its default) and newest `sentAt` first, each letter created the day before it is sent, so the
// two orders agree for every letter (the case the head refresh used to wait on for ever). Prints
// the cold first answer, the peak RSS, what keeping fresh costs the upstream while nothing
// changes (six TTLs of traffic, against a whole read), how long a new issue, an edit in the head
// window (on the archive and on the issue's page) and an unpublished issue (one in the head
// window, one deep down, which only the whole re-read sees) take to show, and when the build
// hook arrives for each. Goals (printed with each run): cold ≤ 10 s, peak RSS ≤ 256 MiB,
// refreshes ≤ 10% of a whole read, new and edited ≤ TTL + 3 s, gone ≤ resync + TTL, no hook on
// start or while nothing changes, one hook per change. BENCH_ARCHIVE_VALIDATORS=both (or etag,
// last-modified) makes the upstream send validators. Every wait is bounded; the upstream, the
// receiver and the BFF are stopped at the end.
import { createServer } from 'node:http';
import { Agent } from 'node:http';
import { performance } from 'node:perf_hooks';
import { createArchive } from '../../build/test/support/fake-upstream/archive.js';
import { startFakeUpstreamServer } from '../../build/test/support/fake-upstream/server.js';
import { get } from '../lib/http.mjs';
import { procStatus, startBff, stopChild } from '../lib/processes.mjs';
import { API_KEY, env, HOST, settings } from '../lib/settings.mjs';
import { progress, sleep } from '../lib/stats.mjs';

const KIB = 1024;
const MIB = 1024 * 1024;
const TTL_SECONDS = 2;
const POLL_MS = 100;
/** The upstream orders measured: its default (by creation) and by sending. */
const ORDERS = ['created', 'newest-sent'];
/** How long after the last change the run waits for a late or repeated hook call. */
const HOOK_QUIET_MS = 3 * TTL_SECONDS * 1000;

/** Reads `url` every POLL_MS until `done(answer)` holds or `limitMs` passes; the seconds it took from `since`, or null. */
async function secondsUntil(agent, url, done, limitMs, since = performance.now()) {
  while (performance.now() - since < limitMs) {
    if (done(await get(agent, url))) return (performance.now() - since) / 1000;
    await sleep(POLL_MS);
  }
  return null;
}

const listed = (answer) => (answer.status === 200 ? JSON.parse(answer.body).data : []);
/** Whether a 200 list answer names `slug`. */
const lists = (answer, slug) => listed(answer).some((issue) => issue.slug === slug);

/** What the upstream has answered so far: calls and body bytes, over every operation. */
function served(sim) {
  const { unknownSlugCalls: _unknown, ...counts } = sim.counts();
  const sum = (values) => Object.values(values).reduce((total, value) => total + value, 0);
  return { calls: sum(counts), bytes: sum(sim.bytesServed()) };
}

/** A build hook receiver on 127.0.0.1: every POST it took, when, and its JSON body. */
async function startHookReceiver() {
  const calls = [];
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      let body;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        body = undefined;
      }
      calls.push({ at: performance.now(), method: req.method, body });
      res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"ok":true}');
    });
  });
  await new Promise((resolve) => server.listen(0, HOST, resolve));
  const { port } = server.address();
  return {
    // A token in the path, as a real build hook has: the service must never log it whole.
    url: `http://${HOST}:${port}/build_hooks/bench-hook-token-not-real`,
    calls,
    /** Seconds from `since` until a call named `slug` as `kind`, waiting up to `limitMs`; null if none came. */
    async secondsUntil(slug, kind, since, limitMs) {
      while (performance.now() - since < limitMs) {
        const call = calls.find((c) => c.at >= since && c.body?.changes?.some((change) => change.slug === slug && change.kind === kind));
        if (call) return (call.at - since) / 1000;
        await sleep(50);
      }
      return null;
    },
    stop: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(resolve);
      }),
  };
}

async function runOnce(order) {
  const { issues, htmlKiB, jsonKiB, latencyMs, resyncSeconds } = settings.archiveScale;
  const validators = ['both', 'etag', 'last-modified'].includes(env.BENCH_ARCHIVE_VALIDATORS) ? env.BENCH_ARCHIVE_VALIDATORS : undefined;
  progress(
    `archive scale (${order}): ${issues} issues of ~${htmlKiB} + ${jsonKiB} KiB, upstream ${latencyMs} ms a call, TTL ${TTL_SECONDS} s, resync ${resyncSeconds} s`,
  );
  const archive = createArchive({ issues, contentBytes: htmlKiB * KIB, jsonBytes: jsonKiB * KIB });
  const sim = await startFakeUpstreamServer({
    apiKey: API_KEY,
    latencyMs,
    publication: archive,
    maxHoldMs: 60_000,
    variant: { order, ...(validators && { validators }) },
  });
  const hooks = await startHookReceiver();
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  let bff;
  try {
    bff = await startBff('bff-archive', sim.baseUrl, {
      extraEnv: { CACHE_TTL_SECONDS: String(TTL_SECONDS), ARCHIVE_RESYNC_SECONDS: String(resyncSeconds), DEPLOY_HOOK_URL: hooks.url },
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
    const hooksWhileNothingChanged = hooks.calls.length;

    // A new issue, sent now.
    const newSlug = `archive-scale-new-${Date.now()}`;
    let since = performance.now();
    sim.publish(newSlug);
    const appeared = await secondsUntil(agent, list, (answer) => lists(answer, newSlug), (TTL_SECONDS + 30) * 1000, since);
    const newHook = await hooks.secondsUntil(newSlug, 'new', since, (TTL_SECONDS + 30) * 1000);

    // The third newest issue edited (in the head window): its subject on the archive, its letter on its page.
    const edited = archive.issues[2].slug;
    const subject = `Corrected at ${Date.now()}`;
    since = performance.now();
    sim.edit(edited, { subject, contentHtml: `<p>${subject}</p>` });
    const editListed = await secondsUntil(
      agent,
      list,
      (answer) => listed(answer).some((issue) => issue.slug === edited && issue.subject === subject),
      (TTL_SECONDS + 30) * 1000,
      since,
    );
    const editPage = await secondsUntil(
      agent,
      `${bff.url}/api/issues/${edited}`,
      (answer) => answer.status === 200 && JSON.parse(answer.body).data.contentHtml === `<p>${subject}</p>`,
      (TTL_SECONDS + 30) * 1000,
      since,
    );
    const editHook = await hooks.secondsUntil(edited, 'edited', since, (TTL_SECONDS + 30) * 1000);

    // The second newest issue taken off the website: in the head window, it leaves at the next refresh.
    const headVictim = archive.issues[1].slug;
    since = performance.now();
    sim.unpublish(headVictim);
    const headLeft = await secondsUntil(
      agent,
      list,
      (answer) => answer.status === 200 && !lists(answer, headVictim),
      (TTL_SECONDS + 30) * 1000,
      since,
    );
    const headHook = await hooks.secondsUntil(headVictim, 'unpublished', since, (TTL_SECONDS + 30) * 1000);

    // One deep down taken off: only the whole re-read sees it (read on the archive page that lists it).
    const deepAt = Math.floor(issues / 2);
    const deepVictim = archive.issues[deepAt].slug;
    const deepPage = `${bff.url}/api/issues?limit=100&offset=${deepAt - 50}`;
    const limitMs = (resyncSeconds + TTL_SECONDS + 30) * 1000;
    if (!lists(await get(agent, deepPage), deepVictim))
      throw new Error(`archive scale: ${deepVictim} is not on the page that should list it`);
    since = performance.now();
    sim.unpublish(deepVictim);
    const deepLeft = await secondsUntil(agent, deepPage, (answer) => answer.status === 200 && !lists(answer, deepVictim), limitMs, since);
    const deepHook = await hooks.secondsUntil(deepVictim, 'unpublished', since, limitMs);
    // A call that came twice for one change, or late, would show here.
    await sleep(HOOK_QUIET_MS);

    return {
      order,
      validators: validators ?? 'none',
      coldMs: cold.ms,
      // The kernel's high-water mark of the process's resident memory, over the whole run.
      peakRssMiB: procStatus(bff.pid).hwmMiB,
      fullRead: { calls: fullRead.calls, mib: fullRead.bytes / MIB },
      steadySixTtls: { calls: steady.calls, mib: steady.bytes / MIB, shareOfFullRead: steady.bytes / fullRead.bytes },
      newIssueSeconds: appeared,
      editListedSeconds: editListed,
      editPageSeconds: editPage,
      unpublishedHeadSeconds: headLeft,
      unpublishedDeepSeconds: deepLeft,
      hooks: {
        whileNothingChanged: hooksWhileNothingChanged,
        newSeconds: newHook,
        editSeconds: editHook,
        unpublishedHeadSeconds: headHook,
        unpublishedDeepSeconds: deepHook,
        calls: hooks.calls.length,
        bodies: hooks.calls.map((call) => call.body),
      },
    };
  } finally {
    agent.destroy();
    if (bff) await stopChild(bff.child);
    await hooks.stop();
    await sim.stop();
  }
}

export async function runArchiveScale() {
  const { issues, htmlKiB, jsonKiB, latencyMs, resyncSeconds } = settings.archiveScale;
  const runs = [];
  for (const order of ORDERS) runs.push(await runOnce(order));
  return { issues, rowKiB: htmlKiB + jsonKiB, latencyMs, ttlSeconds: TTL_SECONDS, resyncSeconds, entry: settings.entry, runs };
}

/** The scenario's lines of the printed report, with each goal. */
export function reportArchiveScale(r) {
  const mark = (ok) => (ok ? 'ok' : 'MISSED');
  const seconds = (value) => (value === null ? 'never (within the wait)' : `${value.toFixed(1)} s`);
  const within = (value, limit) => mark(value !== null && value <= limit);
  const quick = r.ttlSeconds + 3;
  const gone = r.resyncSeconds + r.ttlSeconds;
  const lines = [
    `archive scale: ${r.issues} issues of ~${r.rowKiB} KiB, upstream ${r.latencyMs} ms a call, TTL ${r.ttlSeconds} s, ARCHIVE_RESYNC_SECONDS ${r.resyncSeconds}, ${r.entry}`,
  ];
  for (const run of r.runs) {
    const h = run.hooks;
    lines.push(
      `  upstream listing ${run.order === 'created' ? 'newest createdAt first (each letter created the day before it is sent)' : 'newest sentAt first'}, validators: ${run.validators}`,
      `    cold first answer            ${(run.coldMs / 1000).toFixed(1)} s  (goal ≤ 10 s: ${mark(run.coldMs <= 10_000)})`,
      `    peak RSS                     ${run.peakRssMiB.toFixed(0)} MiB  (goal ≤ 256 MiB: ${mark(run.peakRssMiB <= 256)})`,
      `    a whole read                 ${run.fullRead.calls} calls, ${run.fullRead.mib.toFixed(1)} MiB`,
      `    six TTLs, nothing new        ${run.steadySixTtls.calls} calls, ${run.steadySixTtls.mib.toFixed(2)} MiB = ${(100 * run.steadySixTtls.shareOfFullRead).toFixed(1)}% of a whole read (goal ≤ 10%: ${mark(run.steadySixTtls.shareOfFullRead <= 0.1)})`,
      `    a new issue listed after     ${seconds(run.newIssueSeconds)}  (goal ≤ TTL + 3 s: ${within(run.newIssueSeconds, quick)}); hook after ${seconds(h.newSeconds)}`,
      `    an edit (3rd newest) listed  ${seconds(run.editListedSeconds)}, on its page ${seconds(run.editPageSeconds)}  (goal ≤ TTL + 3 s: ${mark(run.editListedSeconds !== null && run.editPageSeconds !== null && Math.max(run.editListedSeconds, run.editPageSeconds) <= quick)}); hook after ${seconds(h.editSeconds)}`,
      `    unpublished, 2nd newest      gone after ${seconds(run.unpublishedHeadSeconds)}  (goal ≤ resync + TTL = ${gone} s: ${within(run.unpublishedHeadSeconds, gone)}); hook after ${seconds(h.unpublishedHeadSeconds)}`,
      `    unpublished, ${`#${Math.floor(r.issues / 2) + 1} newest`.padEnd(16)}gone after ${seconds(run.unpublishedDeepSeconds)}  (goal ≤ resync + TTL = ${gone} s: ${within(run.unpublishedDeepSeconds, gone)}); hook after ${seconds(h.unpublishedDeepSeconds)}`,
      `    hook calls                   ${h.whileNothingChanged} on start and while nothing changed (goal 0: ${mark(h.whileNothingChanged === 0)}), ${h.calls} in all for 4 changes (goal 4: ${mark(h.calls === 4)})`,
    );
  }
  return lines;
}
