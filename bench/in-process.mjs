// The CPU a cached hit costs inside the process, without sockets, on each of the BFF's two paths:
//   npm run build && node bench/in-process.mjs
// - general: `app.request()` through Hono, the middleware and the route — the whole cost of a
//   cached hit on Workers, where Node's hot path does not apply (plus workerd's own request and
//   response handling);
// - hot path: what Node's hot path computes for the same request (`freshReply`) and what it
//   hands the access log (`logAccess.freshHit`, kept per path as node/hot-path.ts keeps one per
//   copy: a count with the default ACCESS_LOG=summary, a line with BENCH_ACCESS_LOG=all), i.e.
//   everything it adds to writing the bytes.
// The app is the real one (dist/) over the demo upstream, access log on (written to memory).
// µs of this process's CPU per request, median of ROUNDS rounds. Bounded: ROUNDS × N per measure.
import { createDemoService } from './lib/demo-app.mjs';
import { median, table } from './lib/stats.mjs';

const ROUNDS = 5;
const N = { general: 5_000, hot: 50_000 };
const ORIGIN = 'https://site.example';

const { service, slug } = await createDemoService(ORIGIN);

const routes = [
  ['/api/issues', '/api/issues'],
  ['/api/issues/:slug', `/api/issues/${slug}`],
];

const cpuUs = () => {
  const { user, system } = process.cpuUsage();
  return user + system;
};

async function measureGeneral(path, headers) {
  const started = cpuUs();
  for (let i = 0; i < N.general; i += 1) {
    const res = await service.app.request(path, { headers });
    if (res.headers.get('x-cache') !== 'HIT') throw new Error(`${path} is not a cached hit`);
    await res.arrayBuffer();
  }
  return (cpuUs() - started) / N.general;
}

function measureHot(path, headers) {
  const request = {
    method: 'GET',
    target: path,
    origin: headers.Origin,
    ownOrigin: () => 'http://127.0.0.1:8787',
    requestId: undefined,
    ifNoneMatch: undefined,
    accept: undefined,
  };
  const timed = service.logAccess.freshHitsTimed;
  let logHit;
  const started = cpuUs();
  for (let i = 0; i < N.hot; i += 1) {
    const startedAt = timed ? performance.now() : 0;
    const reply = service.freshReply(request);
    if (reply === undefined) throw new Error(`${path} is not answered by the hot path`);
    logHit ??= service.logAccess.freshHit({
      method: 'GET',
      path: reply.path,
      route: reply.route,
      status: reply.status,
      cache: reply.cache,
    });
    logHit(startedAt, reply.requestId);
  }
  return (cpuUs() - started) / N.hot;
}

const rows = [];
for (const [name, path] of routes) {
  for (const [origin, headers] of [
    ['no Origin', {}],
    ['allowed Origin', { Origin: ORIGIN }],
  ]) {
    await service.app.request(path, { headers });
    const general = [];
    const hot = [];
    for (let round = 0; round < ROUNDS; round += 1) {
      general.push(await measureGeneral(path, headers));
      hot.push(measureHot(path, headers));
    }
    rows.push([`${name} (${origin})`, median(general).toFixed(1), median(hot).toFixed(1)]);
  }
}
process.stdout.write(
  `${table(['cached GET', 'general app.request() µs CPU/req', 'hot path freshReply + log µs CPU/req'], rows, [false, true, true])}\n`,
);
