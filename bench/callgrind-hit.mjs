// Where a cached hit's instructions go, ours against bare Hono: each server under valgrind's
// callgrind, instrumentation switched on (callgrind_control -i) only for MEASURED requests after
// WARM ones, then a summary per request with JavaScript frames named (bench/callgrind-summary.mjs).
//   npm run build:bench && node bench/callgrind-hit.mjs      (needs valgrind; about 7 minutes with the defaults)
// BENCH_CALLGRIND_DIR [bench/results/callgrind]: where the profiles, perf maps and summaries go.
// BENCH_SERVERS [ours,hono,hono-same]: hono answers ours' body (uncompressed) with Content-Type
// only; hono-same with every header ours answered a cached hit (as `npm run bench`'s same-hdr).
// Ours always runs first, for what the references answer. BENCH_ACCEPT_ENCODING as in
// bench/instructions.mjs; BENCH_PATH [/api/issues]; BENCH_WARM [10000]; BENCH_MEASURED [10000]
// (fewer leaves TurboFan's compiling of the warm-up in the count).
import { execFileSync, spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { join, resolve } from 'node:path';
import { startUpstreamSim } from '../build/test/support/fake-upstream/bench-upstream.js';
import { summarize } from './callgrind-summary.mjs';
import { get, headersToReplay } from './lib/http.mjs';
import { freePort } from './lib/processes.mjs';
import { API_KEY, benchDir, HOST, root } from './lib/settings.mjs';
import { sleep } from './lib/stats.mjs';

const out = resolve(root, process.env.BENCH_CALLGRIND_DIR || 'bench/results/callgrind');
mkdirSync(out, { recursive: true });
const ENTRY = process.env.BENCH_ENTRY || 'dist/cli.js';
const WARM = Number(process.env.BENCH_WARM || 10_000);
const MEASURED = Number(process.env.BENCH_MEASURED || 10_000);
const headers = process.env.BENCH_ACCEPT_ENCODING ? { 'Accept-Encoding': process.env.BENCH_ACCEPT_ENCODING } : {};
const servers = (process.env.BENCH_SERVERS || 'ours,hono,hono-same').split(',');
const sim = await startUpstreamSim({ latencyMs: 0, apiKey: API_KEY });
const path = process.env.BENCH_PATH || '/api/issues';
const target = path.replace(':slug', sim.archive.issues[0].slug);

/** Runs one server under callgrind; resolves with its profile, its perf map and its answers to a cached hit. */
async function run(name, args, env) {
  const port = await freePort();
  const file = join(out, `${name}.callgrind`);
  // --perf-basic-prof: V8 writes /tmp/perf-<pid>.map, which names the JIT code callgrind cannot
  // (and a log of its own, sent here rather than to the working directory).
  const v8Flags = ['--perf-basic-prof', `--logfile=${join(out, `${name}-v8.log`)}`, '--no-logfile-per-isolate'];
  const child = spawn(
    'valgrind',
    ['--tool=callgrind', '--instr-atstart=no', `--callgrind-out-file=${file}`, process.execPath, ...v8Flags, ...args],
    {
      cwd: root,
      env: { PATH: process.env.PATH ?? '', NODE_ENV: 'production', HOST, PORT: String(port), ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr.on('data', (c) => (stderr += c));
  const exited = new Promise((r) => child.once('exit', r));
  const url = `http://${HOST}:${port}${target}`;
  const agent = new Agent({ keepAlive: true, maxSockets: 10 });
  try {
    for (let i = 0; ; i += 1) {
      if (i === 900) throw new Error(`${name} did not answer:\n${stderr}`);
      try {
        if ((await get(agent, url, { headers })).status === 200) break;
      } catch {}
      await sleep(100);
    }
    // The first answer was a miss: these are what a cached hit answers, with its own headers
    // and, for the references, without Accept-Encoding (they send the body as it is).
    const answer = await get(agent, url, { headers });
    const plainBody = (await get(agent, url)).body;
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
    const control = (on) =>
      execFileSync('callgrind_control', ['-i', on, String(child.pid)], { env: { PATH: process.env.PATH ?? '', HOST } });
    control('on');
    await load(MEASURED);
    control('off');
    agent.destroy();
    child.kill('SIGINT');
    await exited;
    // Kept beside the profile: /tmp/perf-<pid>.map is V8's, one per process, never removed by it.
    const perfMap = join(out, `${name}.perf.map`);
    copyFileSync(`/tmp/perf-${child.pid}.map`, perfMap);
    rmSync(`/tmp/perf-${child.pid}.map`);
    return { file, perfMap, answer: { ...answer, body: plainBody } };
  } finally {
    agent.destroy();
    // Stopped already on success; on a failure, no valgrind is left running.
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}

/** The reference's constants: ours' body, with Content-Type alone or with every header ours sent. */
function constants(name, answer, sameHeaders) {
  const file = join(out, `${name}-responses.json`);
  // The references send the body uncompressed: its coding is left out with Node's own headers.
  const all = headersToReplay(answer.headers, ['content-encoding']);
  const entry = { body: answer.body, contentType: answer.headers['content-type'], ...(sameHeaders ? { headers: all } : {}) };
  writeFileSync(file, JSON.stringify({ [target]: entry }));
  return file;
}

try {
  const profiles = [];
  // Ours always runs: the references answer what it answered.
  const ours = await run('ours', [ENTRY], { NEWSLETTER_API_KEY: API_KEY, NEWSLETTER_API_BASE_URL: sim.baseUrl, CACHE_TTL_SECONDS: '3600' });
  if (servers.includes('ours')) profiles.push(['ours', ours]);
  for (const [name, same] of [
    ['hono', false],
    ['hono-same', true],
  ]) {
    if (servers.includes(name))
      profiles.push([name, await run(name, [join(benchDir, 'baseline-server.mjs'), constants(name, ours.answer, same)], {})]);
  }
  for (const [name, { file, perfMap }] of profiles) {
    const summary = summarize(file, perfMap, MEASURED);
    writeFileSync(join(out, `${name}.txt`), summary.text);
    process.stdout.write(
      `${name}: ${Math.round(summary.total).toLocaleString('en')} instructions per request (${join(out, `${name}.txt`)})\n`,
    );
  }
} finally {
  await sim.close();
}
process.stdout.write(`profiles in ${out} (callgrind_annotate <file> for the raw view)\n`);
