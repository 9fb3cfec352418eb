// What a bench run measures and on what machine: the BENCH_* environment (documented at the top
// of bench/run.mjs), validated once at start-up, and the tools found on this host.
import { execFileSync } from 'node:child_process';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { findNginx } from '../nginx.mjs';

export const root = fileURLToPath(new URL('../..', import.meta.url));
export const benchDir = fileURLToPath(new URL('..', import.meta.url));
export const API_KEY = 'bench-fake-key';
export const HOST = '127.0.0.1';

export const env = process.env;
const num = (name, fallback) => {
  const value = env[name];
  if (value === undefined || value.trim() === '') return fallback;
  const parsed = Number(value);
  if (!Number.isFinite(parsed) || parsed < 0) throw new Error(`${name} must be a non-negative number`);
  return parsed;
};

export const ALL_SCENARIOS = [
  'issues',
  'deep',
  'slug',
  'categories',
  '304',
  'subscribe',
  'stampede',
  'scan',
  'stale',
  'archive-scale',
  'search',
  'bombing',
];
// `npm run bench -- archive-scale stale` runs those only, as BENCH_SCENARIOS=archive-scale,stale does.
const scenarioArgs = process.argv.slice(2).filter((arg) => !arg.startsWith('-'));
export const settings = {
  durationSec: num('BENCH_DURATION', 3),
  pairs: Math.max(1, Math.round(num('BENCH_PAIRS', 3))),
  cpuPairs: Math.max(0, Math.round(num('BENCH_CPU_PAIRS', 5))),
  connections: Math.max(1, Math.round(num('BENCH_CONNECTIONS', 50))),
  warmupSec: num('BENCH_WARMUP', 1),
  upstreamLatencyMs: num('BENCH_UPSTREAM_LATENCY_MS', 50),
  archive: { issues: 300, categories: 4, contentBytes: 5 * 1024 },
  tool: env.BENCH_TOOL === 'autocannon' ? 'autocannon' : 'wrk',
  scenarios: env.BENCH_SCENARIOS
    ? env.BENCH_SCENARIOS.split(',').map((s) => s.trim())
    : scenarioArgs.length > 0
      ? scenarioArgs
      : ALL_SCENARIOS,
  subscribeConnections: Math.max(1, Math.round(num('BENCH_SUBSCRIBE_CONNECTIONS', 10))),
  subscribeRateLimitPerMinute: 10_000,
  stampedeRequests: Math.round(num('BENCH_STAMPEDE_REQUESTS', 1000)),
  stampedeLatencyMs: num('BENCH_STAMPEDE_LATENCY_MS', 500),
  scanSlugs: Math.round(num('BENCH_SCAN_SLUGS', 100_000)),
  scanConnections: Math.max(1, Math.round(num('BENCH_SCAN_CONNECTIONS', 50))),
  scanLatencyMs: num('BENCH_SCAN_LATENCY_MS', 0),
  scanMaxSeconds: num('BENCH_SCAN_MAX_SECONDS', 150),
  staleLatencyMs: num('BENCH_STALE_LATENCY_MS', 1000),
  archiveScale: {
    issues: Math.round(num('BENCH_ARCHIVE_ISSUES', 1000)),
    htmlKiB: num('BENCH_ARCHIVE_HTML_KIB', 90),
    jsonKiB: num('BENCH_ARCHIVE_JSON_KIB', 60),
    latencyMs: num('BENCH_ARCHIVE_LATENCY_MS', 100),
    resyncSeconds: Math.round(num('BENCH_ARCHIVE_RESYNC_SECONDS', 60)),
  },
  search: {
    issues: Math.round(num('BENCH_SEARCH_ISSUES', 1000)),
    htmlKiB: num('BENCH_SEARCH_HTML_KIB', 90),
    jsonKiB: num('BENCH_SEARCH_JSON_KIB', 60),
    queries: Math.max(1, Math.round(num('BENCH_SEARCH_QUERIES', 2000))),
  },
  bombingAddresses: Math.max(1, Math.round(num('BENCH_BOMBING_ADDRESSES', 1000))),
  bombingIps: Math.max(1, Math.min(65_536, Math.round(num('BENCH_BOMBING_IPS', 250)))),
  bombingSeconds: num('BENCH_BOMBING_SECONDS', 30),
  bombingHoldSeconds: Math.max(10, Math.round(num('BENCH_BOMBING_HOLD_SECONDS', 20))),
  serverStdout: ['null', 'count'].includes(env.BENCH_SERVER_STDOUT) ? env.BENCH_SERVER_STDOUT : 'file',
  cpuProfDir: env.BENCH_CPU_PROF || undefined,
  entry: env.BENCH_ENTRY || 'dist/cli.js',
  nodeArgs: (env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean),
  cacheTtlSeconds: env.BENCH_CACHE_TTL_SECONDS,
  accessLog: env.BENCH_ACCESS_LOG,
  // Ours in demo mode: its upstream client calls the sample publication in-process, with no network fetch.
  demo: env.BENCH_DEMO === '1',
};
for (const s of settings.scenarios) if (!ALL_SCENARIOS.includes(s)) throw new Error(`unknown scenario ${s}; use ${ALL_SCENARIOS}`);
export const wants = (name) => settings.scenarios.includes(name);

export function hasCommand(command) {
  try {
    execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

export const cpuCount = cpus().length;
export const clkTck = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();
export const wrkAvailable = hasCommand('wrk');
export const nginxPath = env.BENCH_NGINX === '0' ? undefined : findNginx(hasCommand);
if (settings.tool === 'wrk' && !wrkAvailable) {
  // autocannon needs most of a core near 60k req/s, which can make it the limit (see the note it prints).
  if (env.BENCH_TOOL === 'wrk')
    process.stderr.write('BENCH_TOOL=wrk but wrk is not installed (apt-get install -y wrk); using autocannon\n');
  settings.tool = 'autocannon';
}
