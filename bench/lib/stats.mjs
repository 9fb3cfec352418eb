// Statistics and formatting of bench results, and the bench's own output lines.
import { readFileSync } from 'node:fs';
import { clkTck } from './settings.mjs';

export const median = (values) => {
  const sorted = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

/** Percentiles over the pooled 10 µs histograms of several runs (autocannon), else median of runs (wrk). */
export function pooledLatency(runs) {
  if (runs.some((run) => !run.histogram)) {
    return {
      p50: median(runs.map((r) => r.latency.p50)),
      p99: median(runs.map((r) => r.latency.p99)),
      max: Math.max(...runs.map((r) => r.latency.max)),
    };
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

export function summarizeSide(runs) {
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

export const stripHistogram = ({ histogram, ...rest }) => rest;
export const fmtInt = (n) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '-');
export const fmtMs = (n, digits = 2) => (Number.isFinite(n) ? n.toFixed(digits) : '-');
export const fmtMiB = (n) => (Number.isFinite(n) ? `${n.toFixed(1)} MiB` : '-');
export const pad = (text, width, right = false) => (right ? String(text).padStart(width) : String(text).padEnd(width));

export function table(headers, rows, rightAligned) {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (cells) => cells.map((c, i) => pad(c, widths[i], rightAligned[i])).join('  ');
  return [line(headers), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

/** Share of the machine's CPU time used by other processes over `ms` (noise that no pinning removes). */
export async function backgroundBusyPct(ms = 1000) {
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

export const say = (text = '') => process.stdout.write(`${text}\n`);
export const progress = (text) => process.stderr.write(`[bench] ${text}\n`);
export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
