// Subscription bombing (docs/subscribe.md "Surges"): bots post distinct addresses from many IPs,
// each IP well under the per-IP limit, with the consent box ticked. Run against a BFF with the
// surge threshold at 20 a minute, once without Turnstile (new addresses paused) and once with
// TURNSTILE_MODE=surge (every subscribe needs a token during the surge). A real visitor posts
// every few seconds throughout; with Turnstile it resubmits with a valid token when asked, as the
// form does. Prints what reached the upstream, the answers by status and code, when the surge
// started and ended (the BFF's own log lines), and the visitor's success and latency.
import { createServer } from 'node:http';
import { Agent } from 'node:http';
import { performance } from 'node:perf_hooks';
import { freePort, startBff, stopChild } from '../lib/processes.mjs';
import { HOST, settings } from '../lib/settings.mjs';
import { get } from '../lib/http.mjs';
import { progress, sleep } from '../lib/stats.mjs';

const SUBSCRIBERS = 'POST /newsletter/subscribers';
const SITE_KEY = '1x00000000000000000000AA';

/** A siteverify on loopback: tokens starting with `pass-` pass, once each; bots have none. */
async function startSiteverify() {
  const spent = new Set();
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      const token = new URLSearchParams(body).get('response') ?? '';
      const success = token.startsWith('pass-') && !spent.has(token);
      spent.add(token);
      res
        .writeHead(200, { 'Content-Type': 'application/json' })
        .end(JSON.stringify({ success, 'error-codes': success ? [] : ['invalid-input-response'] }));
    });
  });
  const port = await freePort();
  await new Promise((resolve) => server.listen(port, HOST, resolve));
  return { url: `http://${HOST}:${port}/siteverify`, close: () => new Promise((resolve) => server.close(resolve)) };
}

/** The BFF's `subscribe_surge_*` log lines as they come, with the bench's clock. */
function watchSurgeLines(child, t0) {
  const lines = [];
  let partial = '';
  child.stdout.on('data', (chunk) => {
    const parts = (partial + chunk).split('\n');
    partial = parts.pop();
    for (const line of parts) {
      if (!line.includes('"subscribe_surge_')) continue;
      lines.push({ atSec: (performance.now() - t0) / 1000, ...JSON.parse(line) });
    }
  });
  return lines;
}

const post = (agent, url, ip, body) =>
  get(agent, `${url}/api/subscribe`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json', 'X-Forwarded-For': ip },
    body: JSON.stringify(body),
  });

const codeOf = (response) => {
  try {
    return JSON.parse(response.body)?.error?.code ?? 'ok';
  } catch {
    return 'not JSON';
  }
};

/** One bombing of `bots` addresses from `ips` IPs over `seconds`, against a BFF configured with `extraEnv`. */
async function bomb(run, label, extraEnv, options) {
  const { sim } = run;
  const { bots, ips, seconds, thresholdPerMinute, holdSeconds, visitorEverySec, withToken } = options;
  const ours = await startBff(`bff-bombing-${label}`, sim.baseUrl, {
    // captureLines keeps stdout piped to this process, where the surge lines are read.
    captureLines: 1,
    extraEnv: {
      TRUSTED_PROXIES: '127.0.0.1',
      SUBSCRIBE_SURGE_PER_MINUTE: String(thresholdPerMinute),
      SUBSCRIBE_SURGE_SECONDS: String(holdSeconds),
      // The default per-IP limit: the bots stay under it, as real ones do.
      SUBSCRIBE_RATE_LIMIT_PER_MINUTE: '10',
      ...extraEnv,
    },
  });
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  const t0 = performance.now();
  const surgeLines = watchSurgeLines(ours.child, t0);
  const before = sim.callsFor(SUBSCRIBERS);
  const answers = {};
  const visitor = { attempts: 0, succeeded: 0, challenged: 0, latenciesMs: [], answers: {} };
  try {
    progress(`bombing (${label}): ${bots} addresses from ${ips} IPs over ${seconds} s, threshold ${thresholdPerMinute}/min`);
    const intervalMs = (seconds * 1000) / bots;
    const pending = [];
    let nextVisitorAt = 0;
    for (let n = 0; n < bots; n += 1) {
      const due = t0 + n * intervalMs;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      const ip = `10.${(n % ips) >> 8}.${(n % ips) & 255}.7`;
      pending.push(
        post(agent, ours.url, ip, { email: `bomb-${n}@target${n % 40}.example`, optInAttestation: true, website: '' }).then(
          (response) => {
            const key = `${response.status} ${codeOf(response)}`;
            answers[key] = (answers[key] ?? 0) + 1;
          },
          () => (answers.error = (answers.error ?? 0) + 1),
        ),
      );
      if (performance.now() - t0 >= nextVisitorAt) {
        nextVisitorAt += visitorEverySec * 1000;
        pending.push(realVisitor(agent, ours.url, visitor, withToken));
      }
    }
    await Promise.all(pending);
    const forwarded = sim.callsFor(SUBSCRIBERS) - before;
    // The surge ends once the rate has stayed below the threshold for the hold: the estimated
    // sliding minute forgets the flood within two fixed minutes of its end. Bounded wait.
    const deadline = performance.now() + (120 + holdSeconds + 30) * 1000;
    while (!surgeLines.some((line) => line.event === 'subscribe_surge_ended') && performance.now() < deadline) await sleep(500);
    const started = surgeLines.find((line) => line.event === 'subscribe_surge_started');
    const ended = surgeLines.find((line) => line.event === 'subscribe_surge_ended');
    const latencies = [...visitor.latenciesMs].sort((a, b) => a - b);
    return {
      label,
      bots,
      ips,
      seconds,
      thresholdPerMinute,
      holdSeconds,
      withToken,
      forwardedUpstream: forwarded,
      // Every address is new: each upstream call is a bot's unless it was the visitor's.
      botAddressesForwarded: forwarded - visitor.succeeded,
      answers,
      surgeStartedAtSec: started?.atSec,
      surgeStart: started && {
        ratePerMinute: started.ratePerMinute,
        distinctIps: started.distinctIps,
        distinctDomains: started.distinctDomains,
        distinctAddresses: started.distinctAddresses,
      },
      surgeEndedAtSec: ended?.atSec,
      surgeEnd: ended && {
        durationSeconds: ended.durationSeconds,
        attempts: ended.attempts,
        challenged: ended.challenged,
        paused: ended.paused,
      },
      floodEndedAtSec: seconds,
      visitor: {
        attempts: visitor.attempts,
        succeeded: visitor.succeeded,
        challenged: visitor.challenged,
        answers: visitor.answers,
        p50Ms: latencies[Math.floor(latencies.length / 2)],
        maxMs: latencies[latencies.length - 1],
      },
    };
  } finally {
    agent.destroy();
    await stopChild(ours.child);
  }
}

let visitorCount = 0;

/** A real visitor: one address, its own IP; asked for a token, it sends a valid one (the widget passed). */
async function realVisitor(agent, url, visitor, withToken) {
  visitorCount += 1;
  const n = visitorCount;
  const ip = `192.0.2.${n % 250}`;
  const body = { email: `reader-${process.pid}-${n}@example.com`, optInAttestation: true, website: '' };
  const started = performance.now();
  visitor.attempts += 1;
  let response = await post(agent, url, ip, body);
  if (withToken && response.status === 403 && codeOf(response) === 'CAPTCHA_REQUIRED') {
    visitor.challenged += 1;
    response = await post(agent, url, ip, { ...body, 'cf-turnstile-response': `pass-visitor-${process.pid}-${n}` });
  }
  visitor.latenciesMs.push(performance.now() - started);
  const key = `${response.status} ${codeOf(response)}`;
  visitor.answers[key] = (visitor.answers[key] ?? 0) + 1;
  if (response.status === 200) visitor.succeeded += 1;
}

/** Both runs: without Turnstile, then with TURNSTILE_MODE=surge. */
export async function runBombing(run) {
  const options = {
    bots: settings.bombingAddresses,
    ips: settings.bombingIps,
    seconds: settings.bombingSeconds,
    thresholdPerMinute: 20,
    holdSeconds: settings.bombingHoldSeconds,
    visitorEverySec: 2,
  };
  const withoutTurnstile = await bomb(run, 'no-turnstile', {}, { ...options, withToken: false });
  const verifier = await startSiteverify();
  try {
    const withTurnstile = await bomb(
      run,
      'turnstile-surge',
      {
        TURNSTILE_SECRET_KEY: '0x4AAAAAAA-bench-fake-secret',
        TURNSTILE_SITE_KEY: SITE_KEY,
        TURNSTILE_VERIFY_URL: verifier.url,
        TURNSTILE_MODE: 'surge',
      },
      { ...options, withToken: true },
    );
    return { runs: [withoutTurnstile, withTurnstile] };
  } finally {
    await verifier.close();
  }
}
