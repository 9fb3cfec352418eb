// Load generator of `npm run bench`, run by bench/run.mjs as a separate process (pinned to its
// own core) so the server under test keeps its core. One run per process:
//   node bench/load.mjs '<json options>'
// Prints one JSON line: requests, req/s, latency percentiles (10 µs resolution), status counts,
// errors, and the CPU used by this process (or by wrk) and by the server during the run.
//
// Options: tool ('autocannon' | 'wrk'), url, method, headers, body, connections, durationSec,
// warmupSec, amount (stop after N requests), maxSeconds (time cap with amount), timeoutSec,
// expectStatus, serverPid, clkTck,
// uniqueEmails ({ prefix }: POST bodies with a distinct email each), uniqueSlugs ({ prefix }:
// GET <url>/<prefix>-<n>, one distinct slug per request), wrkScript (path of bench/wrk-report.lua).
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';

const options = JSON.parse(process.argv[2] ?? '{}');
const clkTck = options.clkTck ?? 100;

/** utime + stime of a process in seconds (from /proc), or undefined when it cannot be read. */
function cpuSeconds(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / clkTck;
  } catch {
    return undefined;
  }
}

/** CPU seconds of this process's reaped children (wrk), from /proc/self/stat cutime + cstime. */
function childrenCpuSeconds() {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[13]) + Number(fields[14])) / clkTck;
}

// Latency histogram: 10 µs buckets up to 5 s, exact max beyond.
const BUCKET_MS = 0.01;
const BUCKETS = 500_000;

function createRecorder() {
  const buckets = new Uint32Array(BUCKETS);
  let count = 0;
  let max = 0;
  let sum = 0;
  const statuses = {};
  return {
    record(statusCode, ms) {
      statuses[statusCode] = (statuses[statusCode] ?? 0) + 1;
      count += 1;
      sum += ms;
      if (ms > max) max = ms;
      buckets[Math.min(BUCKETS - 1, Math.floor(ms / BUCKET_MS))] += 1;
    },
    summary() {
      const sparse = [];
      for (let i = 0; i < BUCKETS; i += 1) if (buckets[i] > 0) sparse.push([i, buckets[i]]);
      return { count, max, mean: count ? sum / count : 0, statuses, histogram: sparse };
    },
  };
}

async function runAutocannon({ measure }) {
  const recorder = createRecorder();
  let sequence = 0;
  const request = {};
  if (options.uniqueEmails) {
    const { prefix } = options.uniqueEmails;
    request.setupRequest = (req) => {
      sequence += 1;
      req.body = JSON.stringify({ email: `${prefix}-${sequence}@example.com`, optInAttestation: true });
      return req;
    };
  } else if (options.uniqueSlugs) {
    const base = new URL(options.url).pathname.replace(/\/$/, '');
    const { prefix } = options.uniqueSlugs;
    request.setupRequest = (req) => {
      sequence += 1;
      req.path = `${base}/${prefix}-${sequence}`;
      return req;
    };
  }
  const instance = autocannon({
    url: options.url,
    method: options.method ?? 'GET',
    headers: options.headers ?? {},
    body: options.body,
    connections: options.connections ?? 50,
    duration: measure ? options.durationSec : options.warmupSec,
    amount: measure ? options.amount : undefined,
    timeout: options.timeoutSec ?? 10,
    requests: [request],
  });
  if (measure) instance.on('response', (_client, statusCode, _bytes, ms) => recorder.record(statusCode, ms));
  // With `amount`, a time cap still bounds the run.
  const cap = measure && options.amount && options.maxSeconds ? setTimeout(() => instance.stop(), options.maxSeconds * 1000) : undefined;
  const result = await instance;
  clearTimeout(cap);
  return { recorder, result, sent: sequence };
}

function runWrk({ measure }) {
  const duration = measure ? options.durationSec : options.warmupSec;
  const headerLines = Object.entries(options.headers ?? {})
    .map(([name, value]) => `${name}: ${value}`)
    .join('\n');
  return new Promise((resolve, reject) => {
    const child = spawn(
      'wrk',
      [
        '-t1',
        `-c${options.connections ?? 50}`,
        `-d${duration}s`,
        `--timeout`,
        `${options.timeoutSec ?? 10}s`,
        '-s',
        options.wrkScript,
        options.url,
      ],
      {
        env: { ...process.env, BENCH_WRK_HEADERS: headerLines, BENCH_WRK_METHOD: options.method ?? 'GET' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    child.stderr.on('data', (chunk) => (err += chunk));
    child.on('error', reject);
    child.on('exit', (code) => {
      const line = out.split('\n').find((l) => l.startsWith('BENCH_JSON '));
      if (code !== 0 || !line) return reject(new Error(`wrk failed (${code}): ${err}${out}`));
      resolve(JSON.parse(line.slice('BENCH_JSON '.length)));
    });
  });
}

async function main() {
  const tool = options.tool ?? 'autocannon';
  if (tool === 'wrk') {
    if (options.warmupSec > 0) await runWrk({ measure: false });
    const serverBefore = cpuSeconds(options.serverPid);
    const loadBefore = childrenCpuSeconds();
    const started = performance.now();
    const w = await runWrk({ measure: true });
    const wallSec = (performance.now() - started) / 1000;
    const serverCpu = cpuSeconds(options.serverPid) - serverBefore;
    const loadCpu = childrenCpuSeconds() - loadBefore;
    const seconds = w.duration_us / 1e6;
    const errors = w.errors.connect + w.errors.read + w.errors.write + w.errors.timeout;
    process.stdout.write(
      `${JSON.stringify({
        tool,
        requests: w.requests,
        seconds,
        rps: w.requests / seconds,
        latency: { p50: w.p50_us / 1000, p90: w.p90_us / 1000, p99: w.p99_us / 1000, max: w.max_us / 1000, mean: w.mean_us / 1000 },
        histogram: null,
        statuses: { 'non-2xx/3xx': w.errors.status },
        unexpected: w.errors.status,
        errors,
        timeouts: w.errors.timeout,
        bytesPerResponse: w.requests ? w.bytes / w.requests : 0,
        serverCpuPct: (100 * serverCpu) / wallSec,
        serverCpuUsPerRequest: w.requests ? (1e6 * serverCpu) / w.requests : null,
        loadCpuPct: (100 * loadCpu) / wallSec,
      })}\n`,
    );
    return;
  }

  if (options.warmupSec > 0) await runAutocannon({ measure: false });
  const serverBefore = cpuSeconds(options.serverPid);
  const loadBefore = process.cpuUsage();
  const started = performance.now();
  const { recorder, result, sent } = await runAutocannon({ measure: true });
  const wallSec = (performance.now() - started) / 1000;
  const serverAfter = cpuSeconds(options.serverPid);
  const load = process.cpuUsage(loadBefore);
  const summary = recorder.summary();
  const percentile = (p) => {
    const target = Math.ceil((p / 100) * summary.count);
    let seen = 0;
    for (const [bucket, n] of summary.histogram) {
      seen += n;
      if (seen >= target) return (bucket + 1) * BUCKET_MS;
    }
    return summary.max;
  };
  const expected = options.expectStatus ?? 200;
  const unexpected = Object.entries(summary.statuses).reduce((n, [code, count]) => n + (Number(code) === expected ? 0 : count), 0);
  process.stdout.write(
    `${JSON.stringify({
      tool,
      requests: summary.count,
      sent,
      seconds: wallSec,
      rps: summary.count / wallSec,
      latency: {
        p50: percentile(50),
        p90: percentile(90),
        p99: percentile(99),
        max: summary.max,
        mean: summary.mean,
      },
      histogram: summary.histogram,
      statuses: summary.statuses,
      unexpected,
      errors: result.errors,
      timeouts: result.timeouts,
      bytesPerResponse: summary.count ? result.throughput.total / summary.count : 0,
      serverCpuPct: serverBefore === undefined || serverAfter === undefined ? null : (100 * (serverAfter - serverBefore)) / wallSec,
      serverCpuUsPerRequest:
        serverBefore === undefined || serverAfter === undefined || !summary.count
          ? null
          : (1e6 * (serverAfter - serverBefore)) / summary.count,
      loadCpuPct: (100 * (load.user + load.system)) / 1e6 / wallSec,
    })}\n`,
  );
}

main().catch((error) => {
  process.stderr.write(`load: ${error?.stack ?? error}\n`);
  process.exit(1);
});
