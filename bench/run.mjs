// `npm run bench` (issue 7, "Benchmark"): the real Node entry (dist/cli.js, NODE_ENV=production)
// against a local upstream simulator, next to a bare-Hono baseline answering the same bytes,
// with load from a separate process. Prints a table and writes bench/results/latest.json.
//
// Everything listens on and targets 127.0.0.1. Every loop and wait is bounded; every child
// process is killed at the end, also on error or Ctrl-C.
//
// Environment overrides (defaults in brackets):
//   BENCH_DURATION [3]  seconds per measured run    BENCH_PAIRS [3]        baseline/same-headers/ours rounds per scenario
//   BENCH_CONNECTIONS [50]                          BENCH_WARMUP [1]       warm-up seconds (first pair only)
//   BENCH_UPSTREAM_LATENCY_MS [50]                  BENCH_TOOL [wrk when installed, else autocannon] (cached scenarios)
//   BENCH_SCENARIOS [all] comma list of: issues,deep,slug,categories,304,subscribe,stampede,scan,stale
//   BENCH_SUBSCRIBE_CONNECTIONS [10]                BENCH_STAMPEDE_REQUESTS [1000]
//   BENCH_STAMPEDE_LATENCY_MS [500]                 BENCH_SCAN_SLUGS [100000]   BENCH_SCAN_CONNECTIONS [50]
//   BENCH_SCAN_LATENCY_MS [0]                       BENCH_SCAN_MAX_SECONDS [150] the scan stops there if not done
//   BENCH_STALE_LATENCY_MS [1000]
//   BENCH_SERVER_STDOUT [file], count or null: where the BFF's stdout (its access log) goes. file: a
//                       temporary file, counted after the run and removed, so the BFF pays for every
//                       line as it would with a file or journald while this process, which shares the
//                       load generator's core, does not read 300+ MB during the run; count: piped here
//                       and counted live; null: /dev/null
//   BENCH_CPU_PROF [unset] a directory: run every server under --cpu-prof (bff-*.cpuprofile, baseline-*,
//                  bff-fresh-* for stampede and scan, bff-stale-*); summarise with bench/profile-summary.mjs
//   BENCH_NO_PIN [unset] 1 to skip taskset pinning
//   BENCH_ENTRY [dist/cli.js] the server entry to measure (e.g. a patched copy, for before/after)
//   BENCH_NODE_ARGS [unset] extra node flags for every BFF process, space-separated (e.g. --trace-deopt)
//   BENCH_NGINX [1 when nginx is installed] 0 to leave out the nginx proxy_cache reference
//
// Two baselines run in the same rounds as ours: bare Hono sending the same body with Content-Type
// only (the target's reference), and bare Hono sending the same body with every header the BFF
// sends (security, CORS, cache headers, a constant X-Request-Id). The second separates the cost
// of writing those header lines from the cost of the code that produces them. When nginx is
// installed, a third reference runs in the same rounds: nginx proxy_cache (one process) in front
// of the second baseline, answering every request from its cache (bench/nginx.mjs).
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { closeSync, createReadStream, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { connect, createServer } from 'node:net';
import { cpus, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { findNginx, nginxConfig } from './nginx.mjs';
import { startUpstreamSim } from './upstream-sim.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const benchDir = fileURLToPath(new URL('.', import.meta.url));
const API_KEY = 'bench-fake-key';
const HOST = '127.0.0.1';

const env = process.env;
const num = (name, fallback) => {
  const value = env[name];
  if (value === undefined || value.trim() === '') return fallback;
  const parsed = Number(value);
  if (!Number.isFinite(parsed) || parsed < 0) throw new Error(`${name} must be a non-negative number`);
  return parsed;
};

const ALL_SCENARIOS = ['issues', 'deep', 'slug', 'categories', '304', 'subscribe', 'stampede', 'scan', 'stale'];
const settings = {
  durationSec: num('BENCH_DURATION', 3),
  pairs: Math.max(1, Math.round(num('BENCH_PAIRS', 3))),
  connections: Math.max(1, Math.round(num('BENCH_CONNECTIONS', 50))),
  warmupSec: num('BENCH_WARMUP', 1),
  upstreamLatencyMs: num('BENCH_UPSTREAM_LATENCY_MS', 50),
  archive: { issues: 300, categories: 4, contentBytes: 5 * 1024 },
  tool: env.BENCH_TOOL === 'autocannon' ? 'autocannon' : 'wrk',
  scenarios: env.BENCH_SCENARIOS ? env.BENCH_SCENARIOS.split(',').map((s) => s.trim()) : ALL_SCENARIOS,
  subscribeConnections: Math.max(1, Math.round(num('BENCH_SUBSCRIBE_CONNECTIONS', 10))),
  subscribeRateLimitPerMinute: 10_000,
  stampedeRequests: Math.round(num('BENCH_STAMPEDE_REQUESTS', 1000)),
  stampedeLatencyMs: num('BENCH_STAMPEDE_LATENCY_MS', 500),
  scanSlugs: Math.round(num('BENCH_SCAN_SLUGS', 100_000)),
  scanConnections: Math.max(1, Math.round(num('BENCH_SCAN_CONNECTIONS', 50))),
  scanLatencyMs: num('BENCH_SCAN_LATENCY_MS', 0),
  scanMaxSeconds: num('BENCH_SCAN_MAX_SECONDS', 150),
  staleLatencyMs: num('BENCH_STALE_LATENCY_MS', 1000),
  serverStdout: ['null', 'count'].includes(env.BENCH_SERVER_STDOUT) ? env.BENCH_SERVER_STDOUT : 'file',
  cpuProfDir: env.BENCH_CPU_PROF || undefined,
  entry: env.BENCH_ENTRY || 'dist/cli.js',
  nodeArgs: (env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean),
};
for (const s of settings.scenarios) if (!ALL_SCENARIOS.includes(s)) throw new Error(`unknown scenario ${s}; use ${ALL_SCENARIOS}`);
const wants = (name) => settings.scenarios.includes(name);

// ---------------------------------------------------------------------------------------------
// Processes: pinning, children, cleanup
// ---------------------------------------------------------------------------------------------

const children = new Set();
/** Temporary files (server stdout in `file` mode), removed at exit whatever happens. */
const tempFiles = new Set();
let cleaningUp = false;

function hasCommand(command) {
  try {
    execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const cpuCount = cpus().length;
const canPin = !env.BENCH_NO_PIN && cpuCount >= 2 && hasCommand('taskset');
const SERVER_CPU = '0';
const LOAD_CPU = '1';
const clkTck = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();
const wrkAvailable = hasCommand('wrk');
const nginxPath = env.BENCH_NGINX === '0' ? undefined : findNginx(hasCommand);
if (settings.tool === 'wrk' && !wrkAvailable) {
  // autocannon needs most of a core near 60k req/s, which can make it the limit (see the note it prints).
  if (env.BENCH_TOOL === 'wrk') process.stderr.write('BENCH_TOOL=wrk but wrk is not installed (apt-get install -y wrk); using autocannon\n');
  settings.tool = 'autocannon';
}

if (canPin) {
  // This process (simulator, orchestration) shares the load generator's core, not the server's.
  execFileSync('taskset', ['-a', '-p', '-c', LOAD_CPU, String(process.pid)], { stdio: 'ignore' });
}

function pinned(cpu, command, args) {
  return canPin ? ['taskset', ['-c', cpu, command, ...args]] : [command, args];
}

function killAll(signal) {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) {
      try {
        child.kill(signal);
      } catch {
        // already gone
      }
    }
  }
}

process.on('exit', () => {
  killAll('SIGKILL');
  for (const file of tempFiles) rmSync(file, { force: true, recursive: true });
});
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    if (cleaningUp) return;
    cleaningUp = true;
    process.stderr.write(`\n${signal}: stopping child processes\n`);
    killAll('SIGKILL');
    process.exit(130);
  });
}

async function stopChild(child, timeoutMs = 5000) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  await exited;
  clearTimeout(timer);
  children.delete(child);
}

/** Lines and bytes of a server's stdout file, read in chunks; the file is removed afterwards. */
async function countLines(file) {
  let lines = 0;
  let bytes = 0;
  for await (const chunk of createReadStream(file)) {
    bytes += chunk.length;
    for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines += 1;
  }
  rmSync(file, { force: true });
  tempFiles.delete(file);
  return { lines, bytes };
}

async function freePort() {
  const server = createServer();
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, HOST, resolve);
  });
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Resolves once something accepts TCP connections on host:port (bounded polling). */
async function waitForPort(port, child, timeoutMs) {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) return false;
    const open = await new Promise((resolvePort) => {
      const socket = connect({ host: HOST, port });
      socket.once('connect', () => {
        socket.destroy();
        resolvePort(true);
      });
      socket.once('error', () => resolvePort(false));
    });
    if (open) return true;
    await sleep(50);
  }
  return false;
}

/**
 * Starts a server child pinned to the server core and resolves once it listens. stdout is piped
 * and counted (its "listening on http://host:port" line says it is up), or goes to a temporary
 * file or /dev/null (then the port, which must be known, is polled).
 */
async function startServerProcess({ name, nodeArgs, script, scriptArgs = [], env: childEnv, ipc = false, stdoutMode = 'count', port: knownPort, captureLines = 0 }) {
  const [command, args] = pinned(SERVER_CPU, process.execPath, [...nodeArgs, script, ...scriptArgs]);
  const toFile = stdoutMode !== 'count' && knownPort !== undefined;
  const stdoutFile = toFile && stdoutMode === 'file' ? join(tmpdir(), `newsletter-bff-bench-${name}-${process.pid}-${Date.now()}.log`) : undefined;
  if (stdoutFile) tempFiles.add(stdoutFile);
  const sink = toFile ? openSync(stdoutFile ?? '/dev/null', 'w') : undefined;
  const child = spawn(command, args, {
    cwd: root,
    env: childEnv,
    stdio: ['ignore', sink ?? 'pipe', 'pipe', ...(ipc ? ['ipc'] : [])],
  });
  if (sink !== undefined) closeSync(sink); // the child has its own copy
  children.add(child);
  const log = { bytes: 0, lines: 0, captured: [], partial: '' };
  let head = '';
  let stderr = '';
  child.stderr.on('data', (chunk) => {
    if (stderr.length < 20_000) stderr += chunk;
  });
  if (toFile) {
    if (!(await waitForPort(knownPort, child, 15_000))) throw new Error(`${name} did not start within 15 s:\n${stderr}`);
    const log = { bytes: Number.NaN, lines: Number.NaN, file: stdoutFile };
    return { name, child, pid: child.pid, port: knownPort, url: `http://${HOST}:${knownPort}`, log, stderr: () => stderr };
  }
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not start within 15 s:\n${head}${stderr}`)), 15_000);
    const onExit = (code) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited (${code}) before listening:\n${head}${stderr}`));
    };
    child.once('exit', onExit);
    child.stdout.on('data', function onData(chunk) {
      log.bytes += chunk.length;
      for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) log.lines += 1;
      if (captureLines > 0 && log.captured.length < captureLines) {
        const parts = (log.partial + chunk).split('\n');
        log.partial = parts.pop();
        log.captured.push(...parts.slice(0, captureLines - log.captured.length));
      }
      if (head.length < 10_000) {
        head += chunk;
        const match = /listening on http:\/\/[^\s]*:(\d+)/.exec(head);
        if (match) {
          clearTimeout(timer);
          child.off('exit', onExit);
          resolve(Number(match[1]));
        }
      }
    });
  });
  return { name, child, pid: child.pid, port, url: `http://${HOST}:${port}`, log, stderr: () => stderr };
}

function bffEnv(upstreamUrl, port, extra = {}) {
  return {
    PATH: env.PATH ?? '',
    NODE_ENV: 'production',
    NEWSLETTER_API_KEY: API_KEY,
    NEWSLETTER_API_BASE_URL: upstreamUrl,
    PORT: String(port),
    HOST,
    SUBSCRIBE_RATE_LIMIT_PER_MINUTE: String(settings.subscribeRateLimitPerMinute),
    ...extra,
  };
}

/** `--cpu-prof` arguments when BENCH_CPU_PROF is set: one profile per server process, named after it. */
function profArgs(name) {
  return settings.cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${settings.cpuProfDir}`, `--cpu-prof-name=${name}-${Date.now()}.cpuprofile`] : [];
}

/** nginx proxy_cache in front of `originUrl`, pinned to the server core, files in a temporary directory. */
async function startNginx(originUrl) {
  const prefix = mkdtempSync(join(tmpdir(), 'newsletter-bff-bench-nginx-'));
  tempFiles.add(prefix);
  const port = await freePort();
  const conf = join(prefix, 'nginx.conf');
  writeFileSync(conf, nginxConfig({ prefix, host: HOST, port, origin: new URL(originUrl).host }));
  const [command, args] = pinned(SERVER_CPU, nginxPath, ['-p', prefix, '-c', conf, '-e', join(prefix, 'error.log')]);
  const child = spawn(command, args, { cwd: prefix, stdio: ['ignore', 'ignore', 'pipe'] });
  children.add(child);
  let stderr = '';
  child.stderr.on('data', (chunk) => {
    if (stderr.length < 20_000) stderr += chunk;
  });
  if (!(await waitForPort(port, child, 15_000))) {
    const log = existsSync(join(prefix, 'error.log')) ? readFileSync(join(prefix, 'error.log'), 'utf8') : '';
    throw new Error(`nginx did not start within 15 s:\n${stderr}${log}`);
  }
  return { name: 'nginx', child, pid: child.pid, port, url: `http://${HOST}:${port}`, stderr: () => stderr };
}

async function startBff(name, upstreamUrl, { extraEnv = {}, nodeArgs = [], ipc = false, captureLines = 0 } = {}) {
  const port = await freePort();
  return startServerProcess({
    name,
    nodeArgs: [...profArgs(name), ...settings.nodeArgs, ...nodeArgs],
    script: settings.entry,
    env: bffEnv(upstreamUrl, port, extraEnv),
    ipc,
    stdoutMode: captureLines > 0 ? 'count' : settings.serverStdout,
    port,
    captureLines,
  });
}

function procStatus(pid) {
  try {
    const text = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (field) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? Number.NaN);
    return { rssMiB: kib('VmRSS') / 1024, hwmMiB: kib('VmHWM') / 1024 };
  } catch {
    return { rssMiB: Number.NaN, hwmMiB: Number.NaN };
  }
}

/** Heap figures from bench/heap-probe.mjs over IPC (after gc), with a bounded wait. */
function probeMemory(server, { gc = true } = {}) {
  const id = Math.random().toString(36).slice(2);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      server.child.off('message', onMessage);
      reject(new Error('heap probe did not answer within 10 s'));
    }, 10_000);
    function onMessage(message) {
      if (message?.type !== 'mem' || message.id !== id) return;
      clearTimeout(timer);
      server.child.off('message', onMessage);
      resolve(message);
    }
    server.child.on('message', onMessage);
    server.child.send({ type: 'mem', id, gc });
  });
}

// ---------------------------------------------------------------------------------------------
// HTTP helpers (orchestrator side) and the load generator child
// ---------------------------------------------------------------------------------------------

function get(agent, url, { method = 'GET', headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = httpRequest(url, { method, headers, agent, timeout: 30_000 }, (res) => {
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('end', () =>
        resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString('utf8'), ms: performance.now() - started }),
      );
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`timeout: ${method} ${url}`)));
    req.on('error', reject);
    req.end(body);
  });
}

/** Runs bench/load.mjs pinned to the load core; resolves with its JSON result. */
function runLoad(options) {
  const payload = JSON.stringify({ tool: 'autocannon', clkTck, wrkScript: join(benchDir, 'wrk-report.lua'), ...options });
  const [command, args] = pinned(LOAD_CPU, process.execPath, [join(benchDir, 'load.mjs'), payload]);
  const limitMs =
    1000 * ((options.warmupSec ?? 0) + (options.durationSec ?? 0) + (options.maxSeconds ?? 0) + (options.timeoutSec ?? 10)) +
    (options.amount && !options.maxSeconds ? 600_000 : 30_000);
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(child);
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    child.stderr.on('data', (chunk) => (err += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), limitMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      children.delete(child);
      const line = out.trim().split('\n').pop();
      if (code !== 0 || !line) return reject(new Error(`load generator failed (${code}): ${err}`));
      resolve(JSON.parse(line));
    });
  });
}

// ---------------------------------------------------------------------------------------------
// Statistics and formatting
// ---------------------------------------------------------------------------------------------

const median = (values) => {
  const sorted = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

/** Percentiles over the pooled 10 µs histograms of several runs (autocannon), else median of runs (wrk). */
function pooledLatency(runs) {
  if (runs.some((run) => !run.histogram)) {
    return { p50: median(runs.map((r) => r.latency.p50)), p99: median(runs.map((r) => r.latency.p99)), max: Math.max(...runs.map((r) => r.latency.max)) };
  }
  const merged = new Map();
  for (const run of runs) for (const [bucket, n] of run.histogram) merged.set(bucket, (merged.get(bucket) ?? 0) + n);
  const buckets = [...merged].sort((a, b) => a[0] - b[0]);
  const total = buckets.reduce((n, [, c]) => n + c, 0);
  const at = (p) => {
    const target = Math.ceil((p / 100) * total);
    let seen = 0;
    for (const [bucket, n] of buckets) {
      seen += n;
      if (seen >= target) return (bucket + 1) * 0.01;
    }
    return Number.NaN;
  };
  return { p50: at(50), p99: at(99), max: Math.max(...runs.map((r) => r.latency.max)) };
}

function summarizeSide(runs) {
  const latency = pooledLatency(runs);
  return {
    rpsMedian: median(runs.map((r) => r.rps)),
    rpsRuns: runs.map((r) => Math.round(r.rps)),
    p50Ms: latency.p50,
    p99Ms: latency.p99,
    maxMs: latency.max,
    errors: runs.reduce((n, r) => n + r.errors, 0),
    unexpected: runs.reduce((n, r) => n + r.unexpected, 0),
    requests: runs.reduce((n, r) => n + r.requests, 0),
    bytesPerResponse: median(runs.map((r) => r.bytesPerResponse)),
    serverCpuPct: median(runs.map((r) => r.serverCpuPct)),
    serverCpuUsPerRequest: median(runs.map((r) => r.serverCpuUsPerRequest)),
    loadCpuPct: median(runs.map((r) => r.loadCpuPct)),
    statuses: runs.reduce((acc, r) => {
      for (const [code, n] of Object.entries(r.statuses)) acc[code] = (acc[code] ?? 0) + n;
      return acc;
    }, {}),
  };
}

const stripHistogram = ({ histogram, ...rest }) => rest;
const fmtInt = (n) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '-');
const fmtMs = (n, digits = 2) => (Number.isFinite(n) ? n.toFixed(digits) : '-');
const fmtMiB = (n) => (Number.isFinite(n) ? `${n.toFixed(1)} MiB` : '-');
const pad = (text, width, right = false) => (right ? String(text).padStart(width) : String(text).padEnd(width));

function table(headers, rows, rightAligned) {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (cells) => cells.map((c, i) => pad(c, widths[i], rightAligned[i])).join('  ');
  return [line(headers), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

/** Share of the machine's CPU time used by other processes over `ms` (noise that no pinning removes). */
async function backgroundBusyPct(ms = 1000) {
  const read = () => {
    const [, ...fields] = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/);
    const values = fields.map(Number);
    const idle = values[3] + (values[4] ?? 0);
    return { idle, total: values.reduce((a, b) => a + b, 0) };
  };
  try {
    const before = read();
    const ownBefore = process.cpuUsage();
    await new Promise((resolve) => setTimeout(resolve, ms));
    const after = read();
    const own = process.cpuUsage(ownBefore);
    const total = after.total - before.total;
    const busy = total - (after.idle - before.idle);
    const ownTicks = ((own.user + own.system) / 1e6) * clkTck;
    return total > 0 ? Math.max(0, (100 * (busy - ownTicks)) / total) : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

const say = (text = '') => process.stdout.write(`${text}\n`);
const progress = (text) => process.stderr.write(`[bench] ${text}\n`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------------------------------------
// Scenarios
// ---------------------------------------------------------------------------------------------

async function main() {
  if (!existsSync(resolve(root, settings.entry))) {
    throw new Error(`${settings.entry} is missing: build first (npm run build), or run \`npm run bench\``);
  }
  const startedAt = new Date();
  const t0 = performance.now();
  const results = {
    meta: {
      date: startedAt.toISOString(),
      node: process.version,
      v8: process.versions.v8,
      platform: `${process.platform} ${process.arch}`,
      cpuCount: cpuCount,
      cpuModel: cpus()[0]?.model ?? 'unknown',
      pinned: canPin ? { server: Number(SERVER_CPU), loadGeneratorAndSimulator: Number(LOAD_CPU) } : false,
      loadTool: settings.tool,
      wrkAvailable,
      settings,
    },
  };

  results.meta.backgroundBusyPctBefore = await backgroundBusyPct();
  if (results.meta.backgroundBusyPctBefore > 10) {
    progress(`warning: other processes use ${results.meta.backgroundBusyPctBefore.toFixed(0)}% of this machine's CPU; figures will be noisy`);
  }
  const sim = await startUpstreamSim({ latencyMs: settings.upstreamLatencyMs, apiKey: API_KEY });
  const newest = sim.archive.issues[0].slug;
  const servers = [];
  const agent = new Agent({ keepAlive: true, maxSockets: 16 });

  try {
    // ---- Cached scenarios: ours vs the bare-Hono baseline, alternating -------------------
    const cachedScenarios = [
      { id: 'issues', name: 'GET /api/issues (default page)', path: '/api/issues' },
      { id: 'deep', name: 'GET /api/issues deep page', path: '/api/issues?offset=200&limit=50' },
      { id: 'slug', name: 'GET /api/issues/:slug', path: `/api/issues/${newest}` },
      { id: 'categories', name: 'GET /api/categories', path: '/api/categories' },
      { id: '304', name: 'GET /api/issues/:slug → 304', path: `/api/issues/${newest}`, revalidate: true },
    ].filter((s) => wants(s.id));
    const needsMain = cachedScenarios.length > 0 || wants('subscribe');

    let ours;
    if (needsMain) {
      progress(`starting the BFF (${settings.entry}, NODE_ENV=production) and the baseline`);
      ours = await startBff('bff', sim.baseUrl);
      servers.push(ours);
      results.meta.oursStartRssMiB = procStatus(ours.pid).rssMiB;
    }

    if (cachedScenarios.length > 0) {
      // Warm every path on ours; what it answers becomes the baselines' constants.
      const responses = {};
      const responsesWithHeaders = {};
      for (const scenario of cachedScenarios) {
        const first = await get(agent, ours.url + scenario.path);
        const second = await get(agent, ours.url + scenario.path);
        if (first.status !== 200 || second.status !== 200) {
          throw new Error(`warm-up of ${scenario.path} answered ${first.status}/${second.status}: ${second.body.slice(0, 200)}`);
        }
        if (second.headers['x-cache'] !== 'HIT') throw new Error(`${scenario.path} is not cached (X-Cache: ${second.headers['x-cache']})`);
        scenario.bodyBytes = Buffer.byteLength(second.body);
        scenario.etag = second.headers.etag;
        scenario.oursHeaderCount = Object.keys(second.headers).length;
        const allHeaders = {};
        for (const [name, value] of Object.entries(second.headers)) {
          if (!['date', 'connection', 'keep-alive', 'content-length', 'transfer-encoding'].includes(name)) allHeaders[name] = value;
        }
        const etag = responses[scenario.path]?.etag || scenario.revalidate ? { etag: second.headers.etag } : {};
        responses[scenario.path] = { body: second.body, contentType: second.headers['content-type'], ...etag };
        responsesWithHeaders[scenario.path] = { ...responses[scenario.path], headers: allHeaders };
        if (scenario.revalidate) {
          const revalidated = await get(agent, ours.url + scenario.path, { headers: { 'If-None-Match': scenario.etag } });
          if (revalidated.status !== 304) throw new Error(`If-None-Match on ${scenario.path} answered ${revalidated.status}, not 304`);
        }
      }
      results.meta.callsAfterWarmUp = sim.counts();
      const startBaseline = async (name, constants) => {
        const file = join(tmpdir(), `newsletter-bff-bench-${name}-${process.pid}.json`);
        writeFileSync(file, JSON.stringify(constants));
        const port = await freePort();
        const server = await startServerProcess({
          name,
          nodeArgs: profArgs(name),
          script: join(benchDir, 'baseline-server.mjs'),
          scriptArgs: [file],
          env: { PATH: env.PATH ?? '', NODE_ENV: 'production', PORT: String(port), HOST },
        });
        servers.push(server);
        rmSync(file, { force: true });
        return server;
      };
      const baseline = await startBaseline('baseline', responses);
      const sameHeaders = await startBaseline('baseline-same-headers', responsesWithHeaders);
      let nginx;
      if (nginxPath) {
        progress(`starting nginx proxy_cache (${nginxPath}) in front of the same-headers baseline`);
        nginx = await startNginx(sameHeaders.url);
        servers.push(nginx);
        for (const scenario of cachedScenarios) {
          await get(agent, nginx.url + scenario.path);
          const second = await get(agent, nginx.url + scenario.path);
          if (second.headers['x-cache'] !== 'HIT') throw new Error(`nginx does not cache ${scenario.path} (X-Cache: ${second.headers['x-cache']})`);
        }
        results.meta.nginx = { binary: nginxPath, version: spawnSync(nginxPath, ['-v'], { encoding: 'utf8' }).stderr.trim() };
      }
      const references = [baseline, sameHeaders, ...(nginx ? [nginx] : [])];
      // Same bytes, same Content-Type: checked, not assumed.
      for (const scenario of cachedScenarios) {
        const headers = scenario.revalidate ? { 'If-None-Match': scenario.etag } : {};
        const a = await get(agent, ours.url + scenario.path, { headers });
        for (const server of references) {
          const b = await get(agent, server.url + scenario.path, { headers });
          if (a.status !== b.status || a.body !== b.body || a.headers['content-type'] !== b.headers['content-type']) {
            throw new Error(`${server.name} does not answer ${scenario.path} like the BFF (${a.status}/${b.status})`);
          }
          if (server === baseline) scenario.baselineResponseHeaderNames = Object.keys(b.headers);
        }
        scenario.oursResponseHeaderNames = Object.keys(a.headers);
      }

      results.cached = [];
      for (const scenario of cachedScenarios) {
        const runs = { baseline: [], sameHeaders: [], ...(nginx ? { nginx: [] } : {}), ours: [] };
        const sides = [['baseline', baseline], ['sameHeaders', sameHeaders], ...(nginx ? [['nginx', nginx]] : []), ['ours', ours]];
        for (let pair = 0; pair < settings.pairs; pair += 1) {
          for (const [side, server] of sides) {
            progress(`${scenario.name}: pair ${pair + 1}/${settings.pairs}, ${side}`);
            const run = await runLoad({
              tool: settings.tool,
              url: server.url + scenario.path,
              headers: scenario.revalidate ? { 'If-None-Match': scenario.etag } : {},
              connections: settings.connections,
              durationSec: settings.durationSec,
              warmupSec: pair === 0 ? settings.warmupSec : 0,
              expectStatus: scenario.revalidate ? 304 : 200,
              serverPid: server.pid,
            });
            runs[side].push(run);
          }
        }
        const ratios = runs.ours.map((run, i) => run.rps / runs.baseline[i].rps);
        const sameHeadersRatios = runs.ours.map((run, i) => run.rps / runs.sameHeaders[i].rps);
        const nginxRatios = nginx ? runs.ours.map((run, i) => run.rps / runs.nginx[i].rps) : undefined;
        results.cached.push({
          id: scenario.id,
          scenario: scenario.name,
          path: scenario.path,
          requestHeaders: scenario.revalidate ? { 'If-None-Match': scenario.etag } : {},
          bodyBytes: scenario.revalidate ? 0 : scenario.bodyBytes,
          baseline: summarizeSide(runs.baseline),
          sameHeaders: summarizeSide(runs.sameHeaders),
          ours: summarizeSide(runs.ours),
          ratios,
          medianRatio: median(ratios),
          sameHeadersRatios,
          medianSameHeadersRatio: median(sameHeadersRatios),
          ...(nginx ? { nginx: summarizeSide(runs.nginx), nginxRatios, medianNginxRatio: median(nginxRatios) } : {}),
          responseHeaderNames: { ours: scenario.oursResponseHeaderNames, baseline: scenario.baselineResponseHeaderNames },
          runs: Object.fromEntries(Object.entries(runs).map(([side, list]) => [side, list.map(stripHistogram)])),
        });
      }
      results.meta.callsAfterCachedScenarios = sim.counts();
    }

    // ---- POST /api/subscribe: overhead over the simulated upstream latency ---------------
    if (wants('subscribe')) {
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
      results.subscribe = {
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
      };
    }

    if (ours) {
      results.meta.oursEndRss = procStatus(ours.pid);
      if (ours.log.file) Object.assign(ours.log, await countLines(ours.log.file));
      results.meta.oursAccessLog = { lines: ours.log.lines, bytes: ours.log.bytes, sink: settings.serverStdout };
    }
    // Stop the throughput servers before the memory scenarios: their cores and sockets are free.
    for (const server of servers.splice(0)) await stopChild(server.child);

    // ---- Stampede and slug scan: a fresh BFF with the heap probe preloaded ---------------
    if (wants('stampede') || wants('scan')) {
      const probeArgs = ['--expose-gc', '--import', join(benchDir, 'heap-probe.mjs')];
      const fresh = await startBff('bff-fresh', sim.baseUrl, { nodeArgs: probeArgs, ipc: true });
      servers.push(fresh);

      if (wants('stampede')) {
        const slug = sim.archive.issues[150].slug;
        const n = settings.stampedeRequests;
        progress(`stampede: ${n} concurrent cold requests for one slug (upstream ${settings.stampedeLatencyMs} ms)`);
        const wide = new Agent({ keepAlive: true, maxSockets: n, maxFreeSockets: n });
        // Open the n connections first (a 404 route, no upstream), so the n requests really overlap.
        await Promise.all(Array.from({ length: n }, () => get(wide, `${fresh.url}/api/warm-up-connections`)));
        sim.setLatency(settings.stampedeLatencyMs);
        const before = sim.slugCalls(slug);
        const started = performance.now();
        const answers = await Promise.all(Array.from({ length: n }, () => get(wide, `${fresh.url}/api/issues/${slug}`)));
        const wallMs = performance.now() - started;
        sim.setLatency(settings.upstreamLatencyMs);
        wide.destroy();
        const statuses = {};
        const cacheStates = {};
        for (const a of answers) {
          statuses[a.status] = (statuses[a.status] ?? 0) + 1;
          const state = a.headers['x-cache'] ?? 'none';
          cacheStates[state] = (cacheStates[state] ?? 0) + 1;
        }
        const times = answers.map((a) => a.ms).sort((x, y) => x - y);
        results.stampede = {
          requests: n,
          slug,
          upstreamLatencyMs: settings.stampedeLatencyMs,
          upstreamCalls: sim.slugCalls(slug) - before,
          statuses,
          cacheStates,
          allIdenticalBodies: answers.every((a) => a.body === answers[0].body),
          p50Ms: times[Math.floor(times.length / 2)],
          maxMs: times[times.length - 1],
          wallMs,
        };
      }

      if (wants('scan')) {
        const n = settings.scanSlugs;
        progress(`slug scan: ${n.toLocaleString('en-US')} distinct unknown slugs (upstream ${settings.scanLatencyMs} ms, ${settings.scanConnections} connections)`);
        sim.setLatency(settings.scanLatencyMs);
        const prefix = `no-such-issue-${process.pid}`;
        const memBefore = await probeMemory(fresh);
        const procBefore = procStatus(fresh.pid);
        const callsBefore = sim.unknownSlugCalls;
        const scan = await runLoad({
          url: `${fresh.url}/api/issues/`,
          uniqueSlugs: { prefix },
          amount: n,
          maxSeconds: settings.scanMaxSeconds,
          connections: settings.scanConnections,
          warmupSec: 0,
          durationSec: 0,
          expectStatus: 404,
          serverPid: fresh.pid,
        });
        const upstreamCalls = sim.unknownSlugCalls - callsBefore;
        const scanned = scan.sent ?? n;
        const procAfter = procStatus(fresh.pid);
        const memAfter = await probeMemory(fresh);
        // Recent slugs again (the newest 100 skipped: their answers may still have been in flight
        // when the load generator stopped): they should be answered from the 404 cache.
        const repeatLast = Math.max(0, scan.requests - 100);
        const repeatFirst = Math.max(1, repeatLast - 999);
        const repeatCount = Math.max(0, repeatLast - repeatFirst + 1);
        const repeatBefore = sim.unknownSlugCalls;
        for (let i = repeatFirst; i <= repeatLast; i += 50) {
          const batch = [];
          for (let j = i; j <= Math.min(i + 49, repeatLast); j += 1) batch.push(get(agent, `${fresh.url}/api/issues/${prefix}-${j}`));
          await Promise.all(batch);
        }
        sim.setLatency(settings.upstreamLatencyMs);
        const MiB = 2 ** 20;
        results.slugScan = {
          slugs: scanned,
          slugsPlanned: n,
          stoppedByTimeCap: scanned < n,
          requestsAnswered: scan.requests,
          statuses: scan.statuses,
          errors: scan.errors,
          seconds: scan.seconds,
          serverCpuPct: scan.serverCpuPct,
          serverCpuUsPerRequest: scan.serverCpuUsPerRequest,
          loadCpuPct: scan.loadCpuPct,
          rps: scan.rps,
          upstreamCalls,
          upstreamCallsPerDistinctSlug: upstreamCalls / scanned,
          repeatOfLastSlugs: { slugs: repeatCount, upstreamCalls: sim.unknownSlugCalls - repeatBefore },
          heapUsedMiB: { before: memBefore.heapUsed / MiB, after: memAfter.heapUsed / MiB, growth: (memAfter.heapUsed - memBefore.heapUsed) / MiB },
          heapTotalMiB: { before: memBefore.heapTotal / MiB, after: memAfter.heapTotal / MiB },
          externalMiB: { before: memBefore.external / MiB, after: memAfter.external / MiB },
          arrayBuffersMiB: { before: memBefore.arrayBuffers / MiB, after: memAfter.arrayBuffers / MiB },
          rssMiB: { before: procBefore.rssMiB, after: procAfter.rssMiB, growth: procAfter.rssMiB - procBefore.rssMiB, peak: procAfter.hwmMiB },
          gcBeforeHeapReading: memAfter.gcExposed,
          cacheMaxBytesMiB: 64,
          heapBudgetMiB: 64 + 32,
          memorySource: 'heapUsed: process.memoryUsage() after gc(), via the bench/heap-probe.mjs preload over IPC; RSS: /proc/<pid>/status VmRSS (peak: VmHWM)',
        };
      }
    }

    // ---- Stale serve while the upstream takes 1 s -----------------------------------------
    if (wants('stale')) {
      progress(`stale serve: CACHE_TTL_SECONDS=1, upstream switched to ${settings.staleLatencyMs} ms`);
      sim.setLatency(settings.upstreamLatencyMs);
      const staleServer = await startBff('bff-stale', sim.baseUrl, { extraEnv: { CACHE_TTL_SECONDS: '1' }, captureLines: 5000 });
      servers.push(staleServer);
      const slug = sim.archive.issues[1].slug;
      const paths = [`/api/issues/${slug}`, '/api/issues', '/api/categories'];
      const single = new Agent({ keepAlive: true, maxSockets: 1 });
      for (const path of paths) {
        await get(single, staleServer.url + path);
        const warm = await get(single, staleServer.url + path);
        if (warm.headers['x-cache'] !== 'HIT') throw new Error(`stale warm-up of ${path}: X-Cache ${warm.headers['x-cache']}`);
      }
      const callsBefore = { ...sim.counts() };
      sim.setLatency(settings.staleLatencyMs);
      await sleep(1500); // past the 1 s TTL, in real time
      const samples = { STALE: [], other: {}, slowest: [] };
      const windowMs = Math.max(100, settings.staleLatencyMs * 0.8);
      const started = performance.now();
      for (let i = 0; i < 600 && performance.now() - started < windowMs; i += 1) {
        const path = paths[i % paths.length];
        const answer = await get(single, staleServer.url + path);
        const state = answer.headers['x-cache'] ?? 'none';
        if (answer.status === 200 && state === 'STALE') {
          samples.STALE.push(answer.ms);
          samples.slowest.push({ i, path, ms: answer.ms, atMs: performance.now() - started });
        }
        else samples.other[`${answer.status} ${state}`] = (samples.other[`${answer.status} ${state}`] ?? 0) + 1;
      }
      single.destroy();
      await sleep(Math.max(settings.staleLatencyMs + 200, 400)); // refreshes land; the access log (flushed every 250 ms) arrives
      // Server-side time of the same requests, from the BFF's own access log ("ms" of each STALE request line).
      const serverMs = [];
      for (const line of staleServer.log.captured) {
        try {
          const entry = JSON.parse(line);
          if (entry.event === 'request' && entry.cache === 'STALE' && typeof entry.ms === 'number') serverMs.push(entry.ms);
        } catch {
          // not a JSON line (the listening banner)
        }
      }
      serverMs.sort((a, b) => a - b);
      const pickServer = (p) => serverMs[Math.min(serverMs.length - 1, Math.ceil((p / 100) * serverMs.length) - 1)];
      const callsAfter = sim.counts();
      sim.setLatency(settings.upstreamLatencyMs);
      const times = samples.STALE.sort((a, b) => a - b);
      const pick = (p) => times[Math.min(times.length - 1, Math.ceil((p / 100) * times.length) - 1)];
      const refreshCalls = {};
      for (const key of Object.keys(callsAfter)) {
        if (key === 'unknownSlugCalls') continue;
        const delta = (callsAfter[key] ?? 0) - (callsBefore[key] ?? 0);
        if (delta) refreshCalls[key] = delta;
      }
      results.stale = {
        ttlSeconds: 1,
        upstreamLatencyMs: settings.staleLatencyMs,
        paths,
        staleResponses: times.length,
        otherResponses: samples.other,
        p50Ms: pick(50),
        p99Ms: pick(99),
        maxMs: times[times.length - 1],
        upstreamCallsDuringWindow: refreshCalls,
        slowest: samples.slowest.sort((a, b) => b.ms - a.ms).slice(0, 5),
        serverSide: serverMs.length
          ? { source: 'the BFF access log ("ms", 0.1 ms resolution)', requests: serverMs.length, p50Ms: pickServer(50), p99Ms: pickServer(99), maxMs: serverMs[serverMs.length - 1] }
          : null,
        measuredFrom: 'the orchestrator, one keep-alive connection, sequential requests',
      };
    }
  } finally {
    agent.destroy();
    for (const server of servers.splice(0)) await stopChild(server.child);
    await sim.close();
  }

  results.meta.totalSeconds = (performance.now() - t0) / 1000;
  results.targets = evaluateTargets(results);
  report(results);
  const outDir = join(benchDir, 'results');
  mkdirSync(outDir, { recursive: true });
  writeFileSync(join(outDir, 'latest.json'), `${JSON.stringify(results, null, 2)}\n`);
  say(`\nJSON: bench/results/latest.json   (${results.meta.totalSeconds.toFixed(0)} s)`);
}

function evaluateTargets(results) {
  const targets = [];
  for (const c of results.cached ?? []) {
    targets.push({ target: `${c.scenario}: ≥ 0.9× baseline`, value: `${c.medianRatio.toFixed(2)}×`, met: c.medianRatio >= 0.9 });
    targets.push({
      target: `${c.scenario}: ≥ 0.9× baseline with the same headers`,
      value: `${c.medianSameHeadersRatio.toFixed(2)}×`,
      met: c.medianSameHeadersRatio >= 0.9,
    });
    if (c.nginx) {
      targets.push({
        target: `${c.scenario}: ≥ 0.6× nginx proxy_cache (stretch)`,
        value: `${c.medianNginxRatio.toFixed(2)}×`,
        met: c.medianNginxRatio >= 0.6,
      });
    }
    targets.push({ target: `${c.scenario}: p99 ≤ 5 ms at ${results.meta.settings.connections} connections`, value: `${fmtMs(c.ours.p99Ms)} ms`, met: c.ours.p99Ms <= 5 });
  }
  if (results.stampede) {
    targets.push({ target: 'stampede → 1 upstream call', value: String(results.stampede.upstreamCalls), met: results.stampede.upstreamCalls === 1 });
  }
  if (results.slugScan) {
    const s = results.slugScan;
    targets.push({
      target: 'slug scan: heap growth ≤ CACHE_MAX_BYTES + 32 MB',
      value: `${s.heapUsedMiB.growth.toFixed(1)} MiB (RSS ${s.rssMiB.growth.toFixed(1)} MiB)`,
      met: s.heapUsedMiB.growth <= s.heapBudgetMiB,
    });
    targets.push({
      target: 'slug scan: ≤ 1 upstream call per distinct slug',
      value: `${s.upstreamCalls} calls / ${s.slugs} slugs`,
      met: s.upstreamCalls <= s.slugs && s.repeatOfLastSlugs.upstreamCalls === 0,
    });
  }
  if (results.stale) {
    targets.push({
      target: 'stale serve < 5 ms (p99, measured at the client)',
      value: `p50 ${fmtMs(results.stale.p50Ms)} ms, p99 ${fmtMs(results.stale.p99Ms)} ms, max ${fmtMs(results.stale.maxMs)} ms`,
      met: results.stale.p99Ms < 5,
    });
  }
  return targets;
}

function report(results) {
  const { meta } = results;
  const s = meta.settings;
  say('');
  say(`newsletter-bff bench — ${meta.date}`);
  say(`Node ${meta.node} (V8 ${meta.v8}), ${meta.platform}, ${meta.cpuCount} × ${meta.cpuModel}`);
  say(
    meta.pinned
      ? `server pinned to CPU ${meta.pinned.server}; load generator (${meta.loadTool}) and upstream simulator on CPU ${meta.pinned.loadGeneratorAndSimulator}`
      : `not pinned (taskset missing, BENCH_NO_PIN or < 2 CPUs); load generator: ${meta.loadTool}`,
  );
  if (meta.backgroundBusyPctBefore > 10) {
    say(`warning: before the run, other processes used ${meta.backgroundBusyPctBefore.toFixed(0)}% of the machine's CPU: figures are noisy`);
  }
  if (s.entry !== 'dist/cli.js') say(`entry: ${s.entry}`);
  if (s.nodeArgs.length) say(`BFF node flags: ${s.nodeArgs.join(' ')}`);
  say(
    `settings: ${s.pairs} pairs × ${s.durationSec} s, ${s.connections} connections, warm-up ${s.warmupSec} s, upstream latency ${s.upstreamLatencyMs} ms, ` +
      `archive ${s.archive.issues} issues / ${s.archive.categories} categories / ${s.archive.contentBytes} B contentHtml`,
  );

  if (results.cached?.length) {
    say('');
    say(`Cached reads — ours = ${s.entry} (NODE_ENV=production), against two bare Hono apps on @hono/node-server answering the same body from a constant:`);
    say('  base = with Content-Type only; same-hdr = with every header ours sends.');
    if (meta.nginx) say(`  nginx = ${meta.nginx.version}, proxy_cache, one process, in front of same-hdr: every measured request is a cache hit.`);
    say(`Each round runs base, same-hdr, ${meta.nginx ? 'nginx, ' : ''}ours in turn.`);
    say('req/s: median of rounds; p50/p99 (ms): pooled over rounds; ratio: median of per-round ours/reference req/s;');
    const sideNames = meta.nginx ? 'base/same-hdr/nginx/ours' : 'base/same-hdr/ours';
    say(`µs CPU/req: server CPU time per answered request (/proc utime+stime), ${sideNames}; srv CPU: % of one core during the run`);
    const sidesOf = (c) => [c.baseline, c.sameHeaders, ...(c.nginx ? [c.nginx] : []), c.ours];
    const rows = results.cached.map((c) => [
      c.scenario,
      c.bodyBytes ? `${(c.bodyBytes / 1024).toFixed(1)} KB` : '0',
      fmtInt(c.baseline.rpsMedian),
      fmtMs(c.baseline.p99Ms),
      fmtInt(c.sameHeaders.rpsMedian),
      ...(meta.nginx ? [fmtInt(c.nginx.rpsMedian)] : []),
      fmtInt(c.ours.rpsMedian),
      fmtMs(c.ours.p50Ms),
      fmtMs(c.ours.p99Ms),
      `${c.ours.errors}/${c.ours.unexpected}`,
      `${c.medianRatio.toFixed(2)}×`,
      `${c.medianSameHeadersRatio.toFixed(2)}×`,
      ...(meta.nginx ? [`${c.medianNginxRatio.toFixed(2)}×`] : []),
      sidesOf(c).map((side) => fmtInt(side.serverCpuUsPerRequest)).join('/'),
      `${sidesOf(c).map((side) => fmtInt(side.serverCpuPct)).join('/')}%`,
    ]);
    const headers = ['scenario', 'body', 'base req/s', 'p99', 'same-hdr req/s', ...(meta.nginx ? ['nginx req/s'] : []), 'ours req/s', 'p50', 'p99'];
    headers.push('err/non-2xx', 'vs base', 'vs same-hdr', ...(meta.nginx ? ['vs nginx'] : []), 'µs CPU/req', 'srv CPU');
    say(table(headers, rows, headers.map((_, i) => i > 0)));
    const unsaturated = results.cached.filter((c) => c.baseline.serverCpuPct < 90);
    if (unsaturated.length) {
      const loadBound = unsaturated.filter((c) => c.baseline.loadCpuPct >= 80);
      say(
        `note: the baseline server used < 90% of its core in ${unsaturated.map((c) => c.id).join(', ')}` +
          (loadBound.length
            ? `; the load generator was near a full core in ${loadBound.map((c) => c.id).join(', ')}, so it may be the limit there, which pulls ratios towards 1${meta.loadTool === 'autocannon' ? ' (try BENCH_TOOL=wrk)' : ''}.`
            : '; other processes on this machine probably competed for the CPU.'),
      );
    }
    const bytes = results.cached[0];
    say(
      `response size incl. headers (${bytes.scenario}): ours ${fmtInt(bytes.ours.bytesPerResponse)} B (${bytes.responseHeaderNames.ours.length} headers), ` +
        `baseline ${fmtInt(bytes.baseline.bytesPerResponse)} B (${bytes.responseHeaderNames.baseline.length} headers)`,
    );
  }

  if (results.subscribe) {
    const r = results.subscribe;
    say('');
    say(`POST /api/subscribe — ${r.connections} connections, simulated upstream ${r.simulatedLatencyMs} ms; ${r.emails}`);
    say(
      table(
        ['scenario', 'req/s', 'p50', 'p99', 'err/non-2xx', 'upstream calls', 'p50 − latency', 'p50 − direct p50', 'p99 − direct p99'],
        [
          [
            'POST /api/subscribe',
            fmtInt(r.rps),
            fmtMs(r.p50Ms),
            fmtMs(r.p99Ms),
            `${r.errors}/${r.unexpected}`,
            `${fmtInt(r.upstreamCalls)} / ${fmtInt(r.requests)} req`,
            `${fmtMs(r.overheadP50Ms)} ms`,
            `${fmtMs(r.overheadOverDirectP50Ms)} ms`,
            `${fmtMs(r.overheadOverDirectP99Ms)} ms`,
          ],
          ['(direct to the simulator)', fmtInt(r.directUpstream.rps), fmtMs(r.directUpstream.p50Ms), fmtMs(r.directUpstream.p99Ms), '', '', '', '', ''],
        ],
        [false, true, true, true, true, true, true, true, true],
      ),
    );
  }

  const lines = [];
  if (results.stampede) {
    const r = results.stampede;
    lines.push([
      'stampede',
      `${r.requests} concurrent cold requests for one slug → ${r.upstreamCalls} upstream call(s); statuses ${JSON.stringify(r.statuses)}, ` +
        `X-Cache ${JSON.stringify(r.cacheStates)}; upstream ${r.upstreamLatencyMs} ms; p50 ${fmtMs(r.p50Ms, 0)} ms, slowest ${fmtMs(r.maxMs, 0)} ms`,
    ]);
  }
  if (results.slugScan) {
    const r = results.slugScan;
    lines.push([
      'slug scan',
      `${fmtInt(r.slugs)} distinct unknown slugs${r.stoppedByTimeCap ? ` (of ${fmtInt(r.slugsPlanned)}: time cap)` : ''} → ${fmtInt(r.upstreamCalls)} upstream calls; ` +
        `${fmtInt(r.rps)} req/s, ${fmtInt(r.serverCpuUsPerRequest)} µs server CPU per miss, ${JSON.stringify(r.statuses)}`,
    ]);
    lines.push([
      '',
      `heapUsed after gc ${fmtMiB(r.heapUsedMiB.before)} → ${fmtMiB(r.heapUsedMiB.after)} (${r.heapUsedMiB.growth >= 0 ? '+' : ''}${r.heapUsedMiB.growth.toFixed(1)}); ` +
        `RSS ${fmtMiB(r.rssMiB.before)} → ${fmtMiB(r.rssMiB.after)} (peak ${fmtMiB(r.rssMiB.peak)}); ` +
        `the last ${fmtInt(r.repeatOfLastSlugs.slugs)} slugs again → ${r.repeatOfLastSlugs.upstreamCalls} upstream calls`,
    ]);
  }
  if (results.stale) {
    const r = results.stale;
    lines.push([
      'stale serve',
      `TTL 1 s, upstream ${r.upstreamLatencyMs} ms: ${r.staleResponses} × STALE; client-side p50 ${fmtMs(r.p50Ms, 3)} ms, p99 ${fmtMs(r.p99Ms, 3)} ms, max ${fmtMs(r.maxMs, 3)} ms` +
        (r.serverSide ? `; server-side (access log) p50 ${fmtMs(r.serverSide.p50Ms, 1)}, p99 ${fmtMs(r.serverSide.p99Ms, 1)}, max ${fmtMs(r.serverSide.maxMs, 1)} ms` : ''),
    ]);
    lines.push([
      '',
      `other answers ${JSON.stringify(r.otherResponses)}; upstream calls meanwhile (background refreshes) ${JSON.stringify(r.upstreamCallsDuringWindow)}`,
    ]);
  }
  if (lines.length) {
    say('');
    say('Cache behaviour');
    for (const [name, text] of lines) say(`  ${pad(name, 12)}${text}`);
  }

  if (meta.oursAccessLog) {
    say('');
    say(
      (meta.oursAccessLog.sink === 'null'
        ? 'BFF stdout (access log) went to /dev/null; '
        : `BFF stdout (access log) during the run: ${fmtInt(meta.oursAccessLog.lines)} lines, ${fmtInt(meta.oursAccessLog.bytes)} bytes (${
            meta.oursAccessLog.sink === 'file' ? 'written to a file, counted afterwards' : 'piped to the bench and counted'
          }); `) +
        `RSS ${fmtMiB(meta.oursStartRssMiB)} at start → ${fmtMiB(meta.oursEndRss?.rssMiB)} at end`,
    );
  }

  if (results.targets.length) {
    say('');
    say('Targets (issue 7)');
    say(table(['target', 'measured', 'met'], results.targets.map((t) => [t.target, t.value, t.met ? 'yes' : 'NO']), [false, true, false]));
  }
}

main().catch(async (error) => {
  process.stderr.write(`bench failed: ${error?.stack ?? error}\n`);
  killAll('SIGKILL');
  process.exitCode = 1;
});
