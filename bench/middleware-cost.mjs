// What Hono's `secureHeaders()`, `requestId()` and `cors()` each add to a cached hit, next to an
// empty async middleware and to the one middleware that replaces them (src/core/http/response-headers.ts,
// from dist/), in one process:
//   npm run build && node bench/middleware-cost.mjs
// Every app answers the same 6 KB body from a constant, the way the BFF answers a cached read, and
// is paired with a control: no middleware, the handler returning every header the app sends in
// one plain record. Two measures, in alternating rounds, medians of rounds:
//   - app.request(): Hono alone, no socket (µs of this process's CPU per request);
//   - @hono/node-server on 127.0.0.1 with a keep-alive client in this process (µs of this
//     process's CPU per request). App and control send the same bytes, so the client's share is
//     the same and the difference is what the middleware costs, including how node-server writes
//     the answer.
// Bounded: ROUNDS × (IN_PROCESS + OVER_HTTP) requests per app.
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { cors } from 'hono/cors';
import { requestId } from 'hono/request-id';
import { secureHeaders } from 'hono/secure-headers';
import { Agent, request } from 'node:http';
import { createOriginPolicy } from '../dist/core/http/origins.js';
import { CORS_POLICY, createHeaderRules, createResponseHeaders, respond } from '../dist/core/http/response-headers.js';
import { median, table } from './lib/stats.mjs';

const ROUNDS = 5;
const IN_PROCESS = 5_000;
const OVER_HTTP = 3_000;
const CONCURRENCY = 8;
const ORIGIN = 'https://www.example.com';
const BODY = JSON.stringify({ ok: true, data: Array.from({ length: 20 }, (_, i) => ({ slug: `issue-${i}`, text: 'x'.repeat(280) })) });
// What the BFF's cached read carries besides the security and CORS headers the middlewares add.
const CACHED_HEADERS = {
  'Content-Type': 'application/json; charset=UTF-8',
  'Cache-Control': 'public, max-age=60, stale-while-revalidate=300, stale-if-error=86400',
  ETag: '"0123456789abcdef"',
  'X-Cache': 'HIT',
};

/** A bare app, or the same app behind `middleware`; the handler builds its answer from a plain record. */
function appWith(middleware, handler = () => new Response(BODY, { status: 200, headers: CACHED_HEADERS })) {
  const app = new Hono();
  if (middleware) app.use(middleware);
  app.get('/api/issues', handler);
  return app;
}

const allowed = [ORIGIN];
const withMiddleware = {
  // What any middleware costs before it does anything: Hono composes the chain instead of calling the one handler.
  'async no-op': appWith(async function noop(_c, next) {
    await next();
  }),
  'secureHeaders()': appWith(secureHeaders()),
  // requestId() hands its header to c.header(): only c.body()/c.json() carry it, a returned Response drops it.
  'requestId()': appWith(requestId(), (c) => c.body(BODY, 200, CACHED_HEADERS)),
  'cors()': appWith(cors({ origin: allowed, exposeHeaders: CORS_POLICY.exposeHeaders })),
  'createResponseHeaders (ours)': appWith(
    createResponseHeaders(createHeaderRules({ allowedOrigins: allowed, origins: createOriginPolicy(allowed) })),
    (c) => respond(c, BODY, 200, CACHED_HEADERS),
  ),
};
const requestHeaders = { Origin: ORIGIN };

/**
 * The control of a middleware: no middleware, the handler returning every header the middleware's
 * app sends (read from one of its answers) in its own plain record, a fresh X-Request-Id each time,
 * after reading the request's Origin and X-Request-Id as the middlewares do.
 */
async function controlOf(app) {
  const res = await app.request('http://localhost/api/issues', { headers: requestHeaders });
  const headers = {};
  for (const [name, value] of res.headers) if (name !== 'content-length') headers[name] = value;
  const hasId = 'x-request-id' in headers;
  // The request headers a middleware reads are read here too: on node-server the first read builds them.
  return appWith(undefined, (c) => {
    c.req.header('origin');
    c.req.header('x-request-id');
    return new Response(BODY, { status: 200, headers: hasId ? { ...headers, 'x-request-id': crypto.randomUUID() } : headers });
  });
}

const apps = {};
for (const [name, app] of Object.entries(withMiddleware)) {
  apps[name] = app;
  apps[`  ${name.replace(' (ours)', '')}: same headers, no middleware`] = await controlOf(app);
}

async function inProcessUs(app) {
  const before = process.cpuUsage();
  for (let i = 0; i < IN_PROCESS; i += 1) {
    const res = await app.request('http://localhost/api/issues', { headers: requestHeaders });
    await res.text();
  }
  const used = process.cpuUsage(before);
  return (used.user + used.system) / IN_PROCESS;
}

function get(agent, port) {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/api/issues', agent, headers: requestHeaders }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.headers));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

async function overHttpUs(port) {
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  let next = 0;
  const worker = async () => {
    while (next < OVER_HTTP) {
      next += 1;
      await get(agent, port);
    }
  };
  const before = process.cpuUsage();
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const used = process.cpuUsage(before);
  agent.destroy();
  return (used.user + used.system) / OVER_HTTP;
}

const servers = {};
for (const [name, app] of Object.entries(apps)) {
  servers[name] = await new Promise((resolve) => {
    const server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, (info) => resolve({ server, port: info.port }));
  });
}

// Each app really sends what its middleware sets (checked once, not assumed).
for (const [name, { port }] of Object.entries(servers)) {
  const agent = new Agent({ keepAlive: false });
  const headers = await get(agent, port);
  process.stdout.write(
    `${name}: ${Object.keys(headers).length} response headers${headers['transfer-encoding'] ? `, ${headers['transfer-encoding']}` : ''}\n`,
  );
  agent.destroy();
}

const samples = Object.fromEntries(Object.keys(apps).map((name) => [name, { inProcess: [], overHttp: [] }]));
for (let round = 0; round < ROUNDS; round += 1) {
  for (const [name, app] of Object.entries(apps)) {
    samples[name].inProcess.push(await inProcessUs(app));
    samples[name].overHttp.push(await overHttpUs(servers[name].port));
  }
}
for (const { server } of Object.values(servers)) await new Promise((resolve) => server.close(resolve));

// Each middleware's row is followed by its control's; Δ is the middleware minus its control.
const names = Object.keys(samples);
const rows = [];
for (let i = 0; i < names.length; i += 2) {
  const [m, c] = [samples[names[i]], samples[names[i + 1]]];
  const cells = (s) => [median(s.inProcess), median(s.overHttp)];
  const [mIn, mHttp] = cells(m);
  const [cIn, cHttp] = cells(c);
  rows.push([names[i], mIn.toFixed(1), (mIn - cIn).toFixed(1), mHttp.toFixed(1), (mHttp - cHttp).toFixed(1)]);
  rows.push([names[i + 1], cIn.toFixed(1), '', cHttp.toFixed(1), '']);
}
process.stdout.write(
  `Node ${process.version}; medians of ${ROUNDS} rounds of ${IN_PROCESS} app.request() and ${OVER_HTTP} loopback requests\n`,
);
process.stdout.write(
  `${table(['app', 'app.request CPU µs', 'Δ vs control', 'node-server CPU µs/req', 'Δ vs control'], rows, [false, true, true, true, true])}\n`,
);
