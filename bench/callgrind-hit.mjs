// Where a cached hit's instructions go, ours against bare Hono: each server under valgrind's
// callgrind, instrumentation switched on (callgrind_control -i) only for MEASURED requests after WARM ones.
//   npm run build:bench && BENCH_CALLGRIND_DIR=<dir> node bench/callgrind-hit.mjs    (then callgrind_annotate)
// BENCH_ACCEPT_ENCODING as in bench/instructions.mjs; BENCH_PATH [/api/issues]; BENCH_SERVERS [ours,hono].
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { join, resolve } from 'node:path';
import { startUpstreamSim } from '../build/test/support/fake-upstream/bench-upstream.js';
import { get } from './lib/http.mjs';
import { freePort } from './lib/processes.mjs';
import { API_KEY, benchDir, HOST, root } from './lib/settings.mjs';
import { sleep } from './lib/stats.mjs';

const out = resolve(process.env.BENCH_CALLGRIND_DIR || 'callgrind-out');
mkdirSync(out, { recursive: true });
const ENTRY = process.env.BENCH_ENTRY || 'dist/cli.js';
const WARM = Number(process.env.BENCH_WARM || 3000);
const MEASURED = Number(process.env.BENCH_MEASURED || 2000);
const headers = process.env.BENCH_ACCEPT_ENCODING ? { 'Accept-Encoding': process.env.BENCH_ACCEPT_ENCODING } : {};
const servers = (process.env.BENCH_SERVERS || 'ours,hono').split(',');
const sim = await startUpstreamSim({ latencyMs: 0, apiKey: API_KEY });
const path = process.env.BENCH_PATH || '/api/issues';
const target = path.replace(':slug', sim.archive.issues[0].slug);

async function run(name, args, env) {
  const port = await freePort();
  const file = join(out, `${name}.callgrind`);
  const child = spawn('valgrind', ['--tool=callgrind', '--instr-atstart=no', `--callgrind-out-file=${file}`, process.execPath, ...args], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', NODE_ENV: 'production', HOST, PORT: String(port), ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (c) => (stderr += c));
  const exited = new Promise((r) => child.once('exit', r));
  const url = `http://${HOST}:${port}${target}`;
  const agent = new Agent({ keepAlive: true, maxSockets: 10 });
  for (let i = 0; ; i += 1) {
    if (i === 900) throw new Error(`${name} did not answer:\n${stderr}`);
    try {
      if ((await get(agent, url)).status === 200) break;
    } catch {}
    await sleep(100);
  }
  const load = async (count) => {
    let sent = 0;
    const worker = async () => {
      while (sent < count) {
        sent += 1;
        const res = await get(agent, url, { headers });
        if (res.status !== 200) throw new Error(`${url} answered ${res.status}`);
      }
    };
    await Promise.all(Array.from({ length: 10 }, worker));
  };
  await load(WARM);
  // vgdb names its pipe after HOST and USER: the server's environment, not this one's.
  const control = (on) => execFileSync('callgrind_control', ['-i', on, String(child.pid)], { env: { PATH: process.env.PATH ?? '', HOST } });
  control('on');
  await load(MEASURED);
  control('off');
  agent.destroy();
  child.kill('SIGINT');
  await exited;
  return file;
}

try {
  if (servers.includes('ours')) {
    await run('ours', [ENTRY], { NEWSLETTER_API_KEY: API_KEY, NEWSLETTER_API_BASE_URL: sim.baseUrl, CACHE_TTL_SECONDS: '3600' });
  }
  if (servers.includes('hono')) {
    const warm = await get(new Agent(), `${sim.baseUrl}`).catch(() => undefined);
    void warm;
    // The reference answers ours' body; a constant body of the same size is enough for a profile.
    const constants = join(out, 'responses.json');
    writeFileSync(constants, JSON.stringify({ [target]: { body: 'x'.repeat(6000), contentType: 'application/json' } }));
    await run('hono', [join(benchDir, 'baseline-server.mjs'), constants], {});
  }
} finally {
  await sim.close();
}
process.stdout.write(`profiles in ${out}\n`);
