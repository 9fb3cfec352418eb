// `node bench/workerd/refresh-calls.mjs [--node]` (after `npm run build`): 300 requests of one
// archive page, each with its own junk query parameters, sent over 2.5 s to `wrangler dev` (or,
// with --node, to dist/cli.js) at CACHE_TTL_SECONDS=2, against the fake upstream on 127.0.0.1
// answering in BENCH_UPSTREAM_LATENCY_MS (100 by default). Prints the List Issues calls the
// upstream received: a refresh per TTL is the goal on both runtimes. On a loaded machine the
// sending itself takes longer than 2.5 s; the printed seconds say how long it took.
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { startFakeUpstreamServer } from '../../build/test/support/fake-upstream/server.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const KEY = 'refresh-calls-key-not-real';
const REQUESTS = 300;
const SPREAD_MS = 2_500;
const onNode = process.argv.includes('--node');

const freePort = () =>
  new Promise((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const upstream = await startFakeUpstreamServer({ apiKey: KEY, latencyMs: Number(process.env.BENCH_UPSTREAM_LATENCY_MS ?? 100) });
const port = await freePort();
const settings = { NEWSLETTER_API_KEY: KEY, NEWSLETTER_API_BASE_URL: upstream.baseUrl, CACHE_TTL_SECONDS: '2', NODE_ENV: 'production' };
const child = onNode
  ? spawn(process.execPath, ['dist/cli.js'], {
      cwd: root,
      detached: true,
      stdio: 'ignore',
      env: { PATH: process.env.PATH, PORT: String(port), HOST: '127.0.0.1', ...settings },
    })
  : spawn(
      'npx',
      [
        'wrangler',
        'dev',
        '--ip',
        '127.0.0.1',
        '--port',
        String(port),
        ...Object.entries(settings).flatMap(([name, value]) => ['--var', `${name}:${value}`]),
      ],
      {
        cwd: root,
        detached: true,
        stdio: 'ignore',
      },
    );
const base = `http://127.0.0.1:${port}`;
try {
  let up = false;
  for (let attempt = 0; attempt < 120 && !up; attempt += 1) {
    up = await fetch(`${base}/api/categories`).then(
      () => true,
      () => false,
    );
    if (!up) await sleep(500);
  }
  if (!up) throw new Error(`${onNode ? 'dist/cli.js' : 'wrangler dev'} did not answer within 60 s`);
  const before = upstream.callsFor('GET /newsletter/issues');
  const started = performance.now();
  const answers = [];
  for (let i = 0; i < REQUESTS; i += 1) {
    const wait = started + (i * SPREAD_MS) / REQUESTS - performance.now();
    if (wait > 0) await sleep(wait);
    answers.push(
      fetch(`${base}/api/issues?limit=5&utm_source=x${i}&junk=${i}`).then(
        (response) => response.status,
        () => 0,
      ),
    );
  }
  const statuses = await Promise.all(answers);
  const seconds = (performance.now() - started) / 1000;
  await sleep(1_500); // refreshes still out land
  console.log(
    `${onNode ? 'Node (dist/cli.js)' : 'workerd (wrangler dev)'}: ${REQUESTS} requests in ${seconds.toFixed(1)} s, ` +
      `${upstream.callsFor('GET /newsletter/issues') - before} List Issues calls, ${statuses.filter((status) => status !== 200).length} answers not 200`,
  );
} finally {
  try {
    process.kill(-child.pid, 'SIGTERM');
  } catch {
    // already gone
  }
  await upstream.stop();
}
