// Summarises a V8 .cpuprofile (from `node --cpu-prof`, e.g. `BENCH_CPU_PROF=/tmp/prof npm run bench`):
// top functions by self time, self time per file/package, and inclusive ("total") time of
// the functions in dist/ (our code) and of selected middleware.
//   node bench/profile-summary.mjs <file.cpuprofile | directory (newest profile)> [--top N] [--requests N]
// With --requests, times are also given per request (µs), e.g. the requests served while profiling.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

const args = process.argv.slice(2);
const flag = (name, fallback) => {
  const i = args.indexOf(name);
  return i === -1 ? fallback : Number(args[i + 1]);
};
const top = flag('--top', 30);
const requests = flag('--requests', 0);
let target = args.find((a, i) => !a.startsWith('--') && !args[i - 1]?.startsWith('--'));
if (!target) {
  process.stderr.write('usage: node bench/profile-summary.mjs <file.cpuprofile | dir> [--top N] [--requests N]\n');
  process.exit(2);
}
if (statSync(target).isDirectory()) {
  const files = readdirSync(target)
    .filter((f) => f.endsWith('.cpuprofile'))
    .map((f) => join(target, f))
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
  if (files.length === 0) throw new Error(`no .cpuprofile in ${target}`);
  target = files[0];
}

const profile = JSON.parse(readFileSync(target, 'utf8'));
const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of profile.nodes) for (const child of n.children ?? []) parent.set(child, n.id);

function fileOf(url) {
  if (!url) return '(native/V8)';
  const clean = url.replace(/^file:\/\//, '');
  const nm = clean.lastIndexOf('/node_modules/');
  if (nm !== -1) {
    const rest = clean.slice(nm + '/node_modules/'.length).split('/');
    const pkg = rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
    const file = rest.slice(rest[0].startsWith('@') ? 2 : 1).join('/');
    return `${pkg}: ${file}`;
  }
  const dist = clean.lastIndexOf('/dist/');
  if (dist !== -1) return `[bff] ${clean.slice(dist + 1)}`;
  if (clean.startsWith('node:')) return clean;
  return clean;
}

function keyOf(node) {
  const { functionName, url, lineNumber } = node.callFrame;
  const name = functionName || '(anonymous)';
  if (!url) return name.startsWith('(') ? name : `${name} [native]`;
  return `${name}  ${fileOf(url)}:${lineNumber + 1}`;
}

// Busy time by cause: each sample goes to the first specific cause found walking up from the
// sampled frame (so work done inside a middleware is charged to that middleware); only stacks
// with no specific cause fall back to the generic ones (framework plumbing, node:http).
const CAUSES = [
  [
    'socket write (writev/write of the response)',
    (k, depth) => depth === 0 && /^(writev|writeBuffer|writeUtf8String|writeLatin1String) \[native\]/.test(k),
  ],
  ['garbage collector', (k) => k.startsWith('(garbage collector)')],
  ['waitUntilOf → c.executionCtx throws on Node (Error + stack)', (k) => k.startsWith('get executionCtx ') || k.startsWith('waitUntilOf ')],
  ['access log line (log.js, logAccess)', (k) => k.includes('[bff] dist/core/log.js') || k.startsWith('logAccess ')],
  ['a real undici Response is built (lightweight Response materialized)', (k) => /^_Response {2}node:internal\/deps\/undici/.test(k)],
  ['Hono `set res` merge (c.res existed before the handler)', (k) => k.startsWith('set res ')],
  ['c.header() after the response exists (cors Vary)', (k) => k.startsWith('header  hono: dist/context.js')],
  ['secureHeaders (12 headers set on c.res after next)', (k) => k.includes('secure-headers')],
  ['cors (c.res.headers.set before next; origin check)', (k) => k.includes('middleware/cors') || k.startsWith('cors.origin ')],
  ["request id (request-ids.js, or Hono's requestId middleware)", (k) => k.includes('request-id')],
  ['query validator + zod', (k) => k.includes('validator/validator') || k.includes('zod:') || k.startsWith('parseOrThrow ')],
  [
    'sendRead / c.body (Response, Headers from the record)',
    (k) => k.startsWith('sendRead ') || k.startsWith('body  hono') || k.startsWith('#newResponse'),
  ],
  ['cache read (public-reads, cache.js, lru-cache)', (k) => /\[bff\] dist\/(public-reads|cache)\.js|lru-cache/.test(k)],
  ['node-server: write a materialized Response (headers → record, stream reader)', (k) => k.startsWith('responseViaResponseObject ')],
  ['node-server: write a lightweight Response (fast path)', (k) => k.startsWith('responseViaCache ')],
];
const GENERIC_CAUSES = [
  ['node-server: request object, listener', (k) => k.includes('@hono/node-server')],
  ['Hono routing / compose', (k) => /hono: dist\/(hono-base|compose|router|request)/.test(k)],
  ['node:http parser / server / streams', (k) => /node:_http|node:internal\/http|node:internal\/streams|node:net|node:events/.test(k)],
];
const byCause = new Map();

const self = new Map();
const selfByFile = new Map();
const total = new Map();
let sampled = 0;
let idle = 0;
const deltas = profile.timeDeltas ?? [];
for (let i = 0; i < profile.samples.length; i += 1) {
  const dt = deltas[i + 1] ?? deltas[i] ?? 0; // µs until the next sample
  const leaf = nodes.get(profile.samples[i]);
  const leafKey = keyOf(leaf);
  if (leaf.callFrame.functionName === '(idle)') {
    idle += dt;
    continue;
  }
  sampled += dt;
  self.set(leafKey, (self.get(leafKey) ?? 0) + dt);
  const file = leaf.callFrame.url ? fileOf(leaf.callFrame.url) : leafKey.startsWith('(') ? leafKey : '(native/V8)';
  selfByFile.set(file, (selfByFile.get(file) ?? 0) + dt);
  let cause;
  for (const rules of [CAUSES, GENERIC_CAUSES]) {
    let depth = 0;
    for (let id = leaf.id; id !== undefined && !cause; id = parent.get(id), depth += 1) {
      const key = keyOf(nodes.get(id));
      cause = rules.find(([, test]) => test(key, depth))?.[0];
    }
    if (cause) break;
  }
  cause ??= 'other (event loop, microtasks, native)';
  byCause.set(cause, (byCause.get(cause) ?? 0) + dt);
  const seen = new Set();
  for (let id = leaf.id; id !== undefined; id = parent.get(id)) {
    const key = keyOf(nodes.get(id));
    if (seen.has(key)) continue;
    seen.add(key);
    total.set(key, (total.get(key) ?? 0) + dt);
  }
}

const ms = (us) => (us / 1000).toFixed(1).padStart(9);
const pct = (us) => `${((100 * us) / sampled).toFixed(1).padStart(5)}%`;
const perReq = (us) => (requests ? `${(us / requests).toFixed(2).padStart(8)} µs/req` : '');
const print = (title, map, n, filter = () => true) => {
  process.stdout.write(`\n${title}\n`);
  for (const [key, us] of [...map]
    .filter(([k]) => filter(k))
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)) {
    process.stdout.write(`${ms(us)} ms ${pct(us)} ${perReq(us)}  ${key}\n`);
  }
};

process.stdout.write(`profile: ${target}\n`);
process.stdout.write(
  `busy ${(sampled / 1000).toFixed(0)} ms, idle ${(idle / 1000).toFixed(0)} ms` +
    (requests ? `; ${requests} requests → ${(sampled / requests).toFixed(1)} µs CPU per request` : '') +
    '\n',
);
print('Busy time by cause (first match walking up from the sampled frame)', byCause, 40);
print(`Top ${top} functions by self time (% of busy time)`, self, top);
print('Self time by file / package', selfByFile, 25);
print('Inclusive time of functions in dist/ (our code, [bff])', total, 40, (k) => k.includes('[bff] '));
print('Inclusive time of selected framework functions', total, 40, (k) => /^(?!.*\[bff\]).*(hono|node-server|lru-cache|zod)/.test(k));
