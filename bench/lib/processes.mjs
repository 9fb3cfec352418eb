// Child processes of a bench run: every server pinned to the server core, every load generator
// to the other, each one tracked so that it is killed at the end, also on error or Ctrl-C.
import { execFileSync, spawn } from 'node:child_process';
import { closeSync, createReadStream, existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { nginxConfig } from '../nginx.mjs';
import { API_KEY, benchDir, clkTck, cpuCount, env, HOST, nginxPath, root, settings, hasCommand } from './settings.mjs';
import { progress, sleep } from './stats.mjs';

export const children = new Set();
/** Temporary files (server stdout in `file` mode), removed at exit whatever happens. */
export const tempFiles = new Set();
let cleaningUp = false;

export const canPin = !env.BENCH_NO_PIN && cpuCount >= 2 && hasCommand('taskset');
export const SERVER_CPU = '0';
export const LOAD_CPU = '1';

if (canPin) {
  // This process (simulator, orchestration) shares the load generator's core, not the server's.
  execFileSync('taskset', ['-a', '-p', '-c', LOAD_CPU, String(process.pid)], { stdio: 'ignore' });
}

export function pinned(cpu, command, args) {
  return canPin ? ['taskset', ['-c', cpu, command, ...args]] : [command, args];
}

export function killAll(signal) {
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

export async function stopChild(child, timeoutMs = 5000) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  await exited;
  clearTimeout(timer);
  children.delete(child);
}

/** Lines and bytes of a server's stdout file, read in chunks; the file is removed afterwards. */
export async function countLines(file) {
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

export async function freePort() {
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
export async function waitForPort(port, child, timeoutMs) {
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
export async function startServerProcess({
  name,
  nodeArgs,
  script,
  scriptArgs = [],
  env: childEnv,
  ipc = false,
  stdoutMode = 'count',
  port: knownPort,
  captureLines = 0,
}) {
  const [command, args] = pinned(SERVER_CPU, process.execPath, [...nodeArgs, script, ...scriptArgs]);
  const toFile = stdoutMode !== 'count' && knownPort !== undefined;
  const stdoutFile =
    toFile && stdoutMode === 'file' ? join(tmpdir(), `newsletter-bff-bench-${name}-${process.pid}-${Date.now()}.log`) : undefined;
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

export function bffEnv(upstreamUrl, port, extra = {}) {
  return {
    PATH: env.PATH ?? '',
    // BENCH_DEMO=1: demo mode, which production refuses.
    NODE_ENV: settings.demo ? 'development' : 'production',
    ...(!settings.demo && { NEWSLETTER_API_KEY: API_KEY, NEWSLETTER_API_BASE_URL: upstreamUrl }),
    PORT: String(port),
    HOST,
    SUBSCRIBE_RATE_LIMIT_PER_MINUTE: String(settings.subscribeRateLimitPerMinute),
    // The bench measures cold reads from one address: the read budget must not be what it meets.
    READ_BUDGET_PER_MINUTE: '100000',
    READ_BUDGET_PER_CLIENT_PER_MINUTE: '100000',
    // The subscribe scenario posts thousands of distinct addresses a minute: a surge by any
    // measure. Detection stays on (its cost is measured) but never trips; the bombing scenario sets its own.
    SUBSCRIBE_SURGE_PER_MINUTE: '100000',
    ...(settings.cacheTtlSeconds ? { CACHE_TTL_SECONDS: settings.cacheTtlSeconds } : {}),
    ...(settings.accessLog ? { ACCESS_LOG: settings.accessLog } : {}),
    ...extra,
  };
}

/** Node flags that load bench/lib/tick-probe.cjs: a SIGUSR2 handler, nothing on the request path. */
export const TICK_PROBE_ARGS = ['--require', join(benchDir, 'lib/tick-probe.cjs')];

/**
 * Sends SIGUSR2 to a server started with TICK_PROBE_ARGS and resolves with the numbers of the first
 * stderr line `pattern` matches; rejects if the server exits or nothing comes within `timeoutMs`.
 */
export function signalAndRead(server, pattern, timeoutMs = 15_000) {
  const { child } = server;
  return new Promise((resolve, reject) => {
    const done = (settle) => {
      clearTimeout(timer);
      child.stderr.off('data', onData);
      child.off('exit', onExit);
      settle();
    };
    const onData = (chunk) => {
      const match = pattern.exec(String(chunk));
      if (match) done(() => resolve(match.slice(1).map(Number)));
    };
    const onExit = (code, signal) => done(() => reject(new Error(`${server.name} exited (${code ?? signal}) before answering SIGUSR2`)));
    const timer = setTimeout(
      () => done(() => reject(new Error(`${server.name} did not answer SIGUSR2 within ${timeoutMs / 1000} s`))),
      timeoutMs,
    );
    child.stderr.on('data', onData);
    child.once('exit', onExit);
    child.kill('SIGUSR2');
  });
}

/** What a process.nextTick costs in `server` now, in ns (bench/lib/tick-probe.cjs). */
export async function probeTicks(server) {
  const [ns] = await signalAndRead(server, /tick probe: (\d+)/);
  return ns;
}

/** `--cpu-prof` arguments when BENCH_CPU_PROF is set: one profile per server process, named after it. */
export function profArgs(name) {
  return settings.cpuProfDir
    ? ['--cpu-prof', `--cpu-prof-dir=${settings.cpuProfDir}`, `--cpu-prof-name=${name}-${Date.now()}.cpuprofile`]
    : [];
}

/** nginx proxy_cache in front of `originUrl`, pinned to the server core, files in a temporary directory. */
export async function startNginx(originUrl) {
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

export async function startBff(name, upstreamUrl, { extraEnv = {}, nodeArgs = [], ipc = false, captureLines = 0 } = {}) {
  const port = await freePort();
  return startServerProcess({
    name,
    nodeArgs: [...TICK_PROBE_ARGS, ...profArgs(name), ...settings.nodeArgs, ...nodeArgs],
    script: settings.entry,
    env: bffEnv(upstreamUrl, port, extraEnv),
    ipc,
    stdoutMode: captureLines > 0 ? 'count' : settings.serverStdout,
    port,
    captureLines,
  });
}

export function procStatus(pid) {
  try {
    const text = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (field) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? Number.NaN);
    return { rssMiB: kib('VmRSS') / 1024, hwmMiB: kib('VmHWM') / 1024 };
  } catch {
    return { rssMiB: Number.NaN, hwmMiB: Number.NaN };
  }
}

/** CPU time `pid` has used so far, in ms (utime + stime of /proc/<pid>/stat). */
export function cpuMs(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / clkTck;
}

/**
 * Resolves once `server` has used under 2% of a core for half a second: the work its warm-up
 * left behind is done. An archive read seeds its letters as issue copies and compresses them
 * behind its answer, seconds of CPU for the bench's 300 (more on a busy host); measured during
 * that, a cached hit looks dearer than it is. Gives up after `maxMs`, saying so.
 */
export async function waitUntilQuiet(server, maxMs = 60_000) {
  const startedAt = performance.now();
  let before = cpuMs(server.pid);
  while (performance.now() - startedAt < maxMs) {
    await sleep(500);
    const now = cpuMs(server.pid);
    if (now - before < 10) return (performance.now() - startedAt) / 1000;
    before = now;
  }
  progress(`${server.name} was still busy ${maxMs / 1000} s after its warm-up; measuring anyway`);
  return maxMs / 1000;
}

/** Heap figures from bench/heap-probe.mjs over IPC (after gc), with a bounded wait. */
export function probeMemory(server, { gc = true } = {}) {
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

/** Runs bench/load.mjs pinned to the load core; resolves with its JSON result. */
export function runLoad(options) {
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
