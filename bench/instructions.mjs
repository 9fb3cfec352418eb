// User-space instructions per cached hit, counted by valgrind (cachegrind, no cache simulation):
// a figure a busy shared machine does not move, where CPU time per request moves by ±30% from one
// round to the next. Kernel time (the socket writes) is not in it; it is about the same for
// every server, since every one writes the same body.
//   npm run build && node bench/instructions.mjs          (needs valgrind: apt-get install -y valgrind)
// For each server and path: one run answering N_FEW requests and one answering N_MANY, both from
// start-up to exit; the difference over N_MANY − N_FEW is what a request costs, start-up and JIT
// warm-up cancelled out. Servers: ours (dist/cli.js, NODE_ENV=production, access log on, written to /dev/null),
// bare Hono (bench/baseline-server.mjs) and raw node:http, the last two answering ours' body with
// Content-Type only. Requests: keep-alive, 10 connections, one request at a time on each.
// BENCH_ENTRY [dist/cli.js]: the server entry to count (a before/after build), as for `npm run bench`.
// Everything listens on 127.0.0.1; every wait is bounded; about 4 minutes.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startUpstreamSim } from '../build/test/support/fake-upstream/bench-upstream.js';
import { get } from './lib/http.mjs';
import { freePort } from './lib/processes.mjs';
import { API_KEY, benchDir, HOST, hasCommand, root } from './lib/settings.mjs';
import { sleep, table } from './lib/stats.mjs';

const ENTRY = process.env.BENCH_ENTRY || 'dist/cli.js';
// BENCH_N_FEW / BENCH_N_MANY [2000 / 12000]: fewer for a quicker, coarser count.
const N_FEW = Number(process.env.BENCH_N_FEW || 2_000);
const N_MANY = Number(process.env.BENCH_N_MANY || 12_000);
// BENCH_ACCEPT_ENCODING: sent with every request (ours answers a compressed copy; the references ignore it).
const ACCEPT_ENCODING = process.env.BENCH_ACCEPT_ENCODING;
const requestHeaders = ACCEPT_ENCODING ? { 'Accept-Encoding': ACCEPT_ENCODING } : {};
// BENCH_REFERENCES=0: count ours only (another build, or another Accept-Encoding, against the references of a full run).
const WITH_REFERENCES = process.env.BENCH_REFERENCES !== '0';
// A run under valgrind lasts minutes: with the default CACHE_TTL_SECONDS (60) the copies go stale
// during it, and the refresh and the stale answers through the general pipeline land in the
// count of the longer run only (docs/node-http.md). An hour keeps every measured request a fresh hit.
const CACHE_TTL_SECONDS = process.env.BENCH_CACHE_TTL_SECONDS || '3600';
const CONNECTIONS = 10;

if (!hasCommand('valgrind')) {
  process.stderr.write('valgrind is not installed (apt-get install -y valgrind)\n');
  process.exit(2);
}

/** Every child started, killed at the end whatever happened. */
const children = new Set();
const scratch = mkdtempSync(join(tmpdir(), 'newsletter-bff-instructions-'));
const sim = await startUpstreamSim({ latencyMs: 0, apiKey: API_KEY });

const oursEnv = (port) => ({
  PATH: process.env.PATH ?? '',
  NODE_ENV: 'production',
  NEWSLETTER_API_KEY: API_KEY,
  NEWSLETTER_API_BASE_URL: sim.baseUrl,
  HOST,
  PORT: String(port),
  CACHE_TTL_SECONDS,
});

/** Starts `args` (under valgrind when `counted`), waits for `path` to answer, and returns a stop function resolving with its instruction count. */
async function start(args, env, path, counted) {
  const port = await freePort();
  const command = counted ? 'valgrind' : process.execPath;
  const argv = counted ? ['--tool=cachegrind', '--cache-sim=no', '--cachegrind-out-file=/dev/null', process.execPath, ...args] : args;
  const child = spawn(command, argv, { cwd: root, env: { ...env(port) }, stdio: ['ignore', 'ignore', 'pipe'] });
  children.add(child);
  let stderr = '';
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const url = `http://${HOST}:${port}${path}`;
  const agent = new Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  for (let attempt = 0; ; attempt += 1) {
    if (attempt === 600) throw new Error(`${args.join(' ')} did not answer within 60 s:\n${stderr}`);
    try {
      if ((await get(agent, url)).status === 200) break;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  return {
    url,
    agent,
    async stop() {
      // Its keep-alive connections closed first, so that every server exits at once and valgrind reports.
      agent.destroy();
      child.kill('SIGINT');
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      await exited;
      clearTimeout(timer);
      const refs = /I\s+refs:\s+([\d,]+)/.exec(stderr)?.[1];
      if (counted && refs === undefined) throw new Error(`no instruction count from valgrind:\n${stderr.slice(-2000)}`);
      return refs === undefined ? undefined : Number(refs.replaceAll(',', ''));
    },
  };
}

/** `count` GET requests of `url`, CONNECTIONS at a time, each waiting for its answer. */
async function load({ url, agent }, count) {
  let sent = 0;
  const worker = async () => {
    while (sent < count) {
      sent += 1;
      const res = await get(agent, url, { headers: requestHeaders });
      if (res.status !== 200) throw new Error(`${url} answered ${res.status}`);
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, worker));
}

async function perRequest(args, env, path) {
  const counts = [];
  for (const n of [N_FEW, N_MANY]) {
    const server = await start(args, env, path, true);
    await load(server, n);
    counts.push(await server.stop());
  }
  return (counts[1] - counts[0]) / (N_MANY - N_FEW);
}

const paths = [
  ['GET /api/issues', '/api/issues'],
  ['GET /api/issues/:slug', `/api/issues/${sim.archive.issues[0].slug}`],
];
const rows = [];
try {
  // Ours' bodies, as the references answer them.
  const warm = await start([ENTRY], oursEnv, paths[0][1], false);
  const constants = {};
  for (const [, path] of paths) {
    await get(warm.agent, warm.url.replace(paths[0][1], path));
    const answer = await get(warm.agent, warm.url.replace(paths[0][1], path));
    constants[path] = { body: answer.body, contentType: answer.headers['content-type'] };
  }
  await warm.stop();
  const constantsFile = join(scratch, 'responses.json');
  writeFileSync(constantsFile, JSON.stringify(constants));
  const rawServer = join(scratch, 'raw-server.mjs');
  writeFileSync(
    rawServer,
    `import { createServer } from 'node:http';
const responses = JSON.parse((await import('node:fs')).readFileSync(${JSON.stringify(constantsFile)}, 'utf8'));
createServer((req, res) => {
  const entry = responses[req.url];
  if (entry === undefined) return res.writeHead(404).end();
  res.writeHead(200, { 'Content-Type': entry.contentType });
  res.end(entry.body);
}).listen(Number(process.env.PORT), process.env.HOST);
process.on('SIGINT', () => process.exit(0));
`,
  );
  const referenceEnv = (port) => ({ PATH: process.env.PATH ?? '', NODE_ENV: 'production', HOST, PORT: String(port) });
  for (const [name, path] of paths) {
    process.stderr.write(`${name}: ours, bare Hono, raw node:http (two valgrind runs each)\n`);
    const ours = await perRequest([ENTRY], oursEnv, path);
    const hono = WITH_REFERENCES
      ? await perRequest([join(benchDir, 'baseline-server.mjs'), constantsFile], referenceEnv, path)
      : Number.NaN;
    const raw = WITH_REFERENCES ? await perRequest([rawServer], referenceEnv, path) : Number.NaN;
    const figure = (count) => (Number.isNaN(count) ? '–' : Math.round(count).toLocaleString('en'));
    const ratio = (count) => (Number.isNaN(count) ? '–' : `${(ours / count).toFixed(2)}×`);
    rows.push([name, figure(ours), figure(hono), figure(raw), ratio(hono), ratio(raw)]);
  }
} finally {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await sim.close();
  rmSync(scratch, { recursive: true, force: true });
}
process.stdout.write(
  `User-space instructions per cached hit (${ENTRY}; Accept-Encoding: ${ACCEPT_ENCODING ?? 'none'}; valgrind cachegrind; ${N_MANY.toLocaleString('en')} − ${N_FEW.toLocaleString('en')} requests, ${CONNECTIONS} keep-alive connections; Node ${process.version})\n` +
    `${table(['cached GET', 'ours', 'bare Hono', 'raw node:http', 'ours / bare Hono', 'ours / raw'], rows, [false, true, true, true, true, true])}\n`,
);
