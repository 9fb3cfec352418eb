// A failing upstream as a small site sees it (docs/upstream.md "Backing off a failing upstream"):
// the service (dist/cli.js) on 127.0.0.1 in front of the fake upstream, CACHE_TTL_SECONDS=2, five
// readers each reading the archive and the categories, then waiting 50 ms, over and over.
//   1. The upstream answers 500 for 40 s: its calls, the service's warn lines, what the readers
//      got; then it is back: how long until each path answers fresh (not STALE) again.
//   2. A 429 with `Retry-After: 30` holds reads off; 500 reads meanwhile: the warn lines.
//   npm run bench:failure-spell        (about two minutes of real time)
// BENCH_ROOT=<another checkout, built with npm run build:bench> measures that build instead.
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = process.env.BENCH_ROOT ?? fileURLToPath(new URL('..', import.meta.url));
const { startFakeUpstreamServer } = await import(pathToFileURL(`${root}/build/test/support/fake-upstream/server.js`).href);

const API_KEY = 'bench-failure-spell-key-not-real';
const PATHS = ['/api/issues', '/api/categories'];
const READERS = 5;
const PAUSE_MS = 50;
const STORM_MS = 40_000;
const RECOVERY_LIMIT_MS = 60_000;
const HOLD_OFF_SECONDS = 30;
const HOLD_OFF_READS = 500;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function freePort() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Calls the fake answered, of every operation. */
function upstreamCalls(fake) {
  const { unknownSlugCalls: _unknown, ...byOperation } = fake.counts();
  return Object.values(byOperation).reduce((sum, count) => sum + count, 0);
}

/** The service as `npm start` runs it, its JSON lines collected as they come. */
async function startService(baseUrl) {
  const port = await freePort();
  const child = spawn(process.execPath, [`${root}/dist/cli.js`], {
    cwd: root,
    env: {
      PATH: process.env.PATH ?? '',
      NEWSLETTER_API_KEY: API_KEY,
      NEWSLETTER_API_BASE_URL: baseUrl,
      CACHE_TTL_SECONDS: '2',
      HOST: '127.0.0.1',
      PORT: String(port),
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = [];
  let partial = '';
  let listening = false;
  child.stdout.on('data', (chunk) => {
    const parts = (partial + chunk).split('\n');
    partial = parts.pop() ?? '';
    for (const line of parts) {
      if (line.includes('listening on')) listening = true;
      if (line.startsWith('{')) lines.push(JSON.parse(line));
    }
  });
  for (let tries = 0; tries < 300 && !listening; tries += 1) await sleep(50);
  if (!listening) throw new Error('the service did not start');
  return { origin: `http://127.0.0.1:${port}`, lines, child };
}

/** `READERS` readers until `until()` says stop; each answer is handed to `onAnswer`. */
async function readers(origin, until, onAnswer) {
  await Promise.all(
    Array.from({ length: READERS }, async () => {
      while (!until()) {
        for (const path of PATHS) {
          const response = await fetch(origin + path);
          await response.arrayBuffer();
          onAnswer(path, response.status, response.headers.get('x-cache') ?? 'none');
        }
        await sleep(PAUSE_MS);
      }
    }),
  );
}

const notInfo = (lines, from = 0) => lines.slice(from).filter((line) => line.level !== 'info');
const byEvent = (lines) => {
  const counts = {};
  for (const line of lines) counts[line.event] = (counts[line.event] ?? 0) + 1;
  return counts;
};

async function main() {
  const fake = await startFakeUpstreamServer({ apiKey: API_KEY });
  const service = await startService(fake.baseUrl);
  try {
    for (const path of PATHS) await (await fetch(service.origin + path)).arrayBuffer();

    // 1. 500 for 40 s, then back.
    const callsBefore = upstreamCalls(fake);
    const linesBefore = service.lines.length;
    fake.setMode({ kind: 'status-storm', statuses: [500] });
    const answers = {};
    const stormEnds = performance.now() + STORM_MS;
    await readers(
      service.origin,
      () => performance.now() >= stormEnds,
      (_path, status, cache) => {
        answers[`${status} ${cache}`] = (answers[`${status} ${cache}`] ?? 0) + 1;
      },
    );
    const stormCalls = upstreamCalls(fake) - callsBefore;
    const stormWarnings = notInfo(service.lines, linesBefore);

    fake.setMode({ kind: 'ok' });
    const recoveredAt = performance.now();
    const firstFresh = {};
    await readers(
      service.origin,
      () => Object.keys(firstFresh).length === PATHS.length || performance.now() - recoveredAt > RECOVERY_LIMIT_MS,
      (path, status, cache) => {
        if (status === 200 && cache !== 'STALE' && firstFresh[path] === undefined)
          firstFresh[path] = Math.round(performance.now() - recoveredAt);
      },
    );
    await sleep(1000);
    const ended = service.lines.slice(linesBefore).filter((line) => line.event === 'upstream_failure_ended');

    // 2. A 429 that holds reads off for 30 s, with 500 reads meanwhile (past the TTL, so they ask).
    await sleep(2500);
    const holdLinesBefore = service.lines.length;
    fake.setMode({ kind: 'rate-limited', retryAfter: String(HOLD_OFF_SECONDS) });
    let reads = 0;
    const holdStatuses = {};
    const holdEnds = performance.now() + HOLD_OFF_SECONDS * 1000;
    // Spaced to fit inside the hold-off with room to spare (each read takes a moment too).
    const spacing = (0.85 * HOLD_OFF_SECONDS * 1000 * READERS) / HOLD_OFF_READS;
    await Promise.all(
      Array.from({ length: READERS }, async (_, reader) => {
        for (let n = reader; n < HOLD_OFF_READS && performance.now() < holdEnds; n += READERS) {
          const response = await fetch(service.origin + PATHS[n % PATHS.length]);
          await response.arrayBuffer();
          reads += 1;
          holdStatuses[`${response.status} ${response.headers.get('x-cache') ?? 'none'}`] =
            (holdStatuses[`${response.status} ${response.headers.get('x-cache') ?? 'none'}`] ?? 0) + 1;
          await sleep(spacing);
        }
      }),
    );
    await sleep(1000);
    const holdWarnings = notInfo(service.lines, holdLinesBefore);

    const result = {
      root,
      storm: {
        seconds: STORM_MS / 1000,
        upstreamCalls: stormCalls,
        warnLines: stormWarnings.length,
        warnEvents: byEvent(stormWarnings),
        answers,
        firstFreshAfterRecoveryMs: firstFresh,
        spellEndedLines: ended.map(({ reason, seconds, readsAffected, failedLoads }) => ({ reason, seconds, readsAffected, failedLoads })),
      },
      holdOff: {
        retryAfterSeconds: HOLD_OFF_SECONDS,
        reads,
        answers: holdStatuses,
        warnLines: holdWarnings.length,
        warnEvents: byEvent(holdWarnings),
      },
    };
    console.log(JSON.stringify(result, null, 2));
  } finally {
    service.child.kill('SIGTERM');
    await new Promise((resolve) => service.child.once('exit', resolve));
    await fake.stop();
  }
}

await main();
