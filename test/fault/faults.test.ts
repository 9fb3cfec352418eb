import { serve, type ServerType } from '@hono/node-server';
import { execFileSync, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { connect } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createApp } from '../../src/core/app.js';
import { createLogger } from '../../src/core/log.js';
import { createUpstreamClient } from '../../src/core/upstream/newsletter-api.js';
import { createFakeClock, testConfig } from '../helpers.js';
import type { DemoIssue } from '../../src/demo/sample-publication.js';
import type { FaultMode } from '../support/fake-upstream/faults.js';
import { startFakeUpstreamServer, startTrapListener, type FakeUpstreamServer } from '../support/fake-upstream/server.js';
import { createLeakScanner, findLeaks, LEAK_API_KEY, responseText, UPSTREAM_HEADERS } from './leak-scan.js';
import { freePort } from '../free-port.js';

type FaultUpstream = FakeUpstreamServer;
/** The fake upstream over the sample publication, sending the headers the leak scan looks for. */
const startFaultUpstream = () => startFakeUpstreamServer({ apiKey: LEAK_API_KEY, headers: { ...UPSTREAM_HEADERS } });

// Issue 7 "Fault and fuzz suite": the real service, over real loopback sockets, against an
// upstream that fails in every way toxiproxy can, and a few more.

const TIMEOUT_MS = 500;
/** The upstream client's defaults: two GET retries, one POST retry, backoff ceilings 100 and 200 ms. */
const GET_ATTEMPTS = 3;
const POST_ATTEMPTS = 2;
const MAX_BACKOFF_MS = 100 + 200;
/** Scheduling, process and loopback overhead on a busy CI machine. */
const MARGIN_MS = 1_500;
/** No request may take longer than every attempt timing out, plus every backoff, plus the margin. */
const BUDGET_MS = TIMEOUT_MS * GET_ATTEMPTS + MAX_BACKOFF_MS + MARGIN_MS;
/** The test client gives up here, so a hung service fails the test instead of hanging it. */
const CLIENT_GIVE_UP_MS = BUDGET_MS + 3_000;
const TIMEOUT_RETRY_AFTER = '5';
const TWENTY_MB = 20 * 1024 * 1024;

/** Headers a visitor's browser sends; none may ever reach the upstream. */
const VISITOR_HEADERS = {
  Cookie: 'visitor_session=visitor-cookie-value',
  Authorization: 'Bearer visitor-token-not-ours',
  'X-Visitor-Header': 'visitor',
};

type Route = 'issue' | 'archive' | 'categories' | 'subscribe';
const ALL_ROUTES: readonly Route[] = ['issue', 'archive', 'categories', 'subscribe'];

interface Exchange {
  route: Route;
  status: number;
  headers: Headers;
  body: string;
  json: unknown;
  ms: number;
}

interface FaultCase {
  /** Completes "when the upstream …". */
  when: string;
  mode: (trapOrigin: string) => FaultMode;
  status: 502 | 503;
  /**
   * Also correct: for a body that is both too large and slow to arrive, whichever of the size cap
   * (502) and the timeout (503) fires first depends on the machine's speed. The cap itself is
   * checked deterministically below, with a long timeout.
   */
  orTimeout?: true;
  /** Upstream calls per GET route and for the subscribe POST. */
  getAttempts: number;
  /** The archive's, where they differ: a page over the body cap is asked again with fewer rows. */
  archiveAttempts?: number;
  postAttempts: number;
  /** Subscribe succeeds: the success envelope came back, whatever the subscriber record holds. */
  subscribeSucceeds?: true;
  /**
   * The upstream is failing (no answer, a 5xx, the key refused): the failure pauses reads
   * (docs/upstream.md "Backing off a failing upstream"), so an issue read whose index refresh
   * failed first is held off rather than asked by slug.
   */
  failing?: true;
}

const FAULT_CASES: FaultCase[] = [
  { when: 'never answers', mode: () => ({ kind: 'hang' }), status: 503, getAttempts: 1, postAttempts: 1, failing: true },
  {
    when: 'answers only after 2 s',
    mode: () => ({ kind: 'latency', ms: 2_000 }),
    status: 503,
    getAttempts: 1,
    postAttempts: 1,
    failing: true,
  },
  {
    when: 'closes the connection before the headers',
    mode: () => ({ kind: 'reset-before-headers' }),
    failing: true,
    status: 502,
    getAttempts: GET_ATTEMPTS,
    postAttempts: POST_ATTEMPTS,
  },
  {
    when: 'resets the connection (TCP RST) before the headers',
    mode: () => ({ kind: 'reset-before-headers', rst: true }),
    failing: true,
    status: 502,
    getAttempts: GET_ATTEMPTS,
    postAttempts: POST_ATTEMPTS,
  },
  {
    when: 'resets the connection halfway through the body',
    mode: () => ({ kind: 'reset-mid-body' }),
    failing: true,
    status: 502,
    getAttempts: GET_ATTEMPTS,
    postAttempts: POST_ATTEMPTS,
  },
  {
    when: 'drips the body one byte every 100 ms',
    mode: () => ({ kind: 'slow-drip', intervalMs: 100 }),
    failing: true,
    status: 503,
    getAttempts: 1,
    postAttempts: 1,
  },
  { when: 'sends truncated JSON', mode: () => ({ kind: 'truncated-json' }), status: 502, getAttempts: 1, postAttempts: 1 },
  {
    when: 'sends a 20 MB body with a Content-Length',
    mode: () => ({ kind: 'huge-body', bytes: TWENTY_MB, declareLength: true }),
    status: 502,
    getAttempts: 1,
    // 100 rows declared as large as 200: the rows are not the problem, so no third ask.
    archiveAttempts: 2,
    postAttempts: 1,
  },
  {
    when: 'streams a 20 MB body without a Content-Length',
    mode: () => ({ kind: 'huge-body', bytes: TWENTY_MB, declareLength: false }),
    status: 502,
    orTimeout: true,
    getAttempts: 1,
    // Asked again with 100, 50 and 25 rows before giving up (or the timeout comes first).
    archiveAttempts: 4,
    postAttempts: 1,
  },
  { when: 'answers 200 with an HTML page', mode: () => ({ kind: 'html' }), status: 502, getAttempts: 1, postAttempts: 1 },
  {
    when: 'answers every call with a 500, 502, 503 or 504',
    mode: () => ({ kind: 'status-storm', statuses: [500, 502, 503, 504] }),
    failing: true,
    status: 502,
    getAttempts: GET_ATTEMPTS,
    postAttempts: POST_ATTEMPTS,
  },
  {
    when: 'answers 501, which no retry can fix',
    mode: () => ({ kind: 'status-storm', statuses: [501] }),
    failing: true,
    status: 502,
    getAttempts: 1,
    postAttempts: 1,
  },
  {
    when: 'rejects the key with a 401',
    mode: () => ({ kind: 'status-storm', statuses: [401] }),
    failing: true,
    status: 502,
    getAttempts: 1,
    postAttempts: 1,
  },
  {
    when: 'redirects with a 302 to another host',
    mode: (trap) => ({ kind: 'redirect', status: 302, location: `${trap}/v1/newsletter/issues` }),
    status: 502,
    getAttempts: 1,
    postAttempts: 1,
  },
  {
    when: 'redirects with a 307 (which keeps method and body) to another host',
    mode: (trap) => ({ kind: 'redirect', status: 307, location: `${trap}/v1/newsletter/subscribers` }),
    status: 502,
    getAttempts: 1,
    postAttempts: 1,
  },
  {
    when: 'answers valid JSON with the wrong fields',
    mode: () => ({ kind: 'wrong-shape' }),
    status: 502,
    getAttempts: 1,
    postAttempts: 1,
    subscribeSucceeds: true,
  },
];

/** Requests no client library would send; each is written to a fresh socket as-is. */
const MALFORMED_REQUESTS = [
  {
    name: 'absolute-form target on another host',
    raw: 'GET http://evil.example/api/issues HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n',
  },
  { name: 'no Host header', raw: 'GET /api/issues HTTP/1.1\r\nConnection: close\r\n\r\n' },
  { name: 'a Host that is not a host', raw: 'GET /api/issues HTTP/1.1\r\nHost: [::1\r\nConnection: close\r\n\r\n' },
  { name: 'a Host with a space and a path', raw: 'GET /api/issues HTTP/1.1\r\nHost: a b/c?d\r\nConnection: close\r\n\r\n' },
  {
    name: 'dot segments towards the upstream path',
    raw: 'GET /api/issues/../../v1/newsletter/subscribers HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n',
  },
  {
    name: 'encoded NUL and slashes in the slug',
    raw: 'GET /api/issues/%00%2f..%2f HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n',
  },
  { name: 'asterisk-form OPTIONS', raw: 'OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' },
  {
    name: 'a raw CR inside a header value',
    raw: 'GET /api/issues HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Bad: a\rb\r\nConnection: close\r\n\r\n',
  },
  { name: 'obsolete line folding', raw: 'GET /api/issues HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Folded: a\r\n b\r\nConnection: close\r\n\r\n' },
  {
    name: 'Content-Length and Transfer-Encoding together (smuggling)',
    raw: 'POST /api/subscribe HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n0\r\n\r\nGET /api/categories HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n',
  },
  {
    name: 'a 64 KB header',
    raw: `GET /api/issues HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'b'.repeat(64 * 1024)}\r\nConnection: close\r\n\r\n`,
  },
  { name: 'not HTTP at all', raw: '\u0016\u0003\u0001\u0000\u00a5\u0001\u0000\u0000\u00a1\u0003\u0003garbage\r\n\r\n' },
  {
    name: 'a subscribe body cut off by the client',
    raw: 'POST /api/subscribe HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 4000\r\nConnection: close\r\n\r\n{"email":"cut@example.com","optIn',
  },
  {
    name: 'a chunked subscribe body larger than the limit',
    raw: `POST /api/subscribe HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n${`4000\r\n${'x'.repeat(0x4000)}\r\n`}0\r\n\r\n`,
  },
];
/** How long a raw exchange may take before the client end gives up (a half-sent body never completes). */
const RAW_EXCHANGE_MS = 1_000;

/** Writes `raw` to a fresh socket and returns whatever came back before the server closed it or we gave up. */
function sendRaw(port: number, raw: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let received = '';
    const timer = setTimeout(() => socket.destroy(), RAW_EXCHANGE_MS);
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
    socket.on('error', (error: NodeJS.ErrnoException) => {
      // A reset after the server refused the request is an answer too.
      if (error.code !== 'ECONNRESET' && error.code !== 'EPIPE') reject(error);
    });
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(received);
    });
    socket.write(raw, 'latin1');
  });
}

const leaks = createLeakScanner();
/** Log lines of the in-process services (the spawned server's are scanned from its stdout). */
const logLines: string[] = [];
const root = fileURLToPath(new URL('../..', import.meta.url));
// Built apart from dist/, so the Node entry suite building at the same time cannot race with it.
const outDir = fileURLToPath(new URL('../../test-output/fault-dist', import.meta.url));

/** The upstream path of each route's operation. */
function upstreamPathOf(route: Route, slug: string): (path: string) => boolean {
  switch (route) {
    case 'issue':
      return (path) => path === `/v1/newsletter/issues/by-slug/${slug}`;
    case 'archive':
      return (path) => path.startsWith('/v1/newsletter/issues?');
    case 'categories':
      return (path) => path === '/v1/newsletter/categories';
    case 'subscribe':
      return (path) => path === '/v1/newsletter/subscribers';
  }
}

/** Sends one request and reads the whole answer; every answer goes through the leak scan. */
async function exchange(origin: string, route: Route, path: string, init: RequestInit = {}): Promise<Exchange> {
  const started = performance.now();
  const response = await fetch(origin + path, {
    ...init,
    headers: { ...VISITOR_HEADERS, ...(init.headers as Record<string, string> | undefined) },
    signal: AbortSignal.timeout(CLIENT_GIVE_UP_MS),
    redirect: 'manual',
  });
  const body = await response.text();
  const ms = performance.now() - started;
  leaks.scanResponse(`${init.method ?? 'GET'} ${path} → ${response.status}`, response, body);
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    json = undefined;
  }
  return { route, status: response.status, headers: response.headers, body, json, ms };
}

function requestFor(origin: string, route: Route, slug: string, email: string): Promise<Exchange> {
  switch (route) {
    case 'issue':
      return exchange(origin, route, `/api/issues/${slug}`);
    case 'archive':
      return exchange(origin, route, '/api/issues?limit=2');
    case 'categories':
      return exchange(origin, route, '/api/categories');
    case 'subscribe':
      return exchange(origin, route, '/api/subscribe', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
        body: JSON.stringify({ email, optInAttestation: true }),
      });
  }
}

function expectErrorEnvelope(result: Exchange, status: number, code: string): void {
  const context = `${result.route} answered ${result.status} ${result.body.slice(0, 200)}`;
  expect(result.status, context).toBe(status);
  expect(result.headers.get('content-type'), context).toMatch(/^application\/json\b/);
  expect(result.headers.get('cache-control'), context).toBe('no-store');
  expect(result.json, context).toEqual({ ok: false, error: { code, message: expect.any(String) } });
}

function expectWithinBudget(result: Exchange): void {
  expect(result.ms, `${result.route} took ${Math.round(result.ms)} ms`).toBeLessThan(BUDGET_MS);
}

/**
 * A read answered from the pause after failures (docs/upstream.md "Backing off a failing
 * upstream"): 503 with a Retry-After of the pause left (at most 2 s after one or two failed
 * rounds), where a timeout of its own says TIMEOUT_RETRY_AFTER.
 */
function isPaused(result: Exchange): boolean {
  const retryAfter = result.headers.get('retry-after');
  return result.status === 503 && (retryAfter === '1' || retryAfter === '2');
}

/** The issue as published upstream, with only its public fields. */
function expectGoodIssue(result: Exchange, issue: DemoIssue): void {
  expect(result.status, result.body.slice(0, 200)).toBe(200);
  const { readingMinutes, older, ...data } = (result.json as { data: { readingMinutes: unknown; older: unknown } }).data;
  expect(result.json).toMatchObject({ ok: true });
  expect(data).toEqual({
    slug: issue.slug,
    subject: issue.subject,
    previewText: issue.previewText,
    thumbnailUrl: issue.thumbnailUrl,
    sentAt: issue.sentAt,
    updatedAt: issue.updatedAt,
    category: issue.category && { name: issue.category.name, slug: issue.category.slug },
    contentHtml: issue.contentHtml,
    // Published just now: the newest issue.
    newer: null,
  });
  expect(readingMinutes).toBeGreaterThanOrEqual(1);
  // The issue before it, or none when the archive index was read before it was published.
  if (older !== null) expect(older).toEqual({ slug: expect.any(String), subject: expect.any(String), sentAt: expect.any(String) });
}

/** Every call the service made carried our key and none of the visitor's headers. */
function expectOnlyOurHeadersUpstream(fault: FaultUpstream): void {
  for (const request of fault.requests) {
    expect(request.headers.authorization).toBe(`Bearer ${LEAK_API_KEY}`);
    expect(request.headers.cookie).toBeUndefined();
    expect(request.headers['x-visitor-header']).toBeUndefined();
    expect(request.headers.host).toBe(`127.0.0.1:${fault.port}`);
  }
}

describe('the Node server (production entry) against a faulty upstream, over real sockets', () => {
  let fault: FaultUpstream;
  let trap: Awaited<ReturnType<typeof startTrapListener>>;
  let child: ChildProcessWithoutNullStreams;
  let exited: Promise<number | null>;
  let origin = '';
  let stdout = '';
  let stderr = '';
  let sequence = 0;

  beforeAll(async () => {
    execFileSync(
      process.execPath,
      [fileURLToPath(new URL('../../node_modules/typescript/bin/tsc', import.meta.url)), '-p', 'tsconfig.build.json', '--outDir', outDir],
      { cwd: root, stdio: 'pipe' },
    );
    fault = await startFaultUpstream();
    trap = await startTrapListener();
    const port = await freePort();
    child = spawn(process.execPath, [`${outDir}/cli.js`], {
      cwd: root,
      env: {
        PATH: process.env.PATH ?? '',
        NODE_ENV: 'production',
        NEWSLETTER_API_KEY: LEAK_API_KEY,
        NEWSLETTER_API_BASE_URL: fault.baseUrl,
        UPSTREAM_TIMEOUT_MS: String(TIMEOUT_MS),
        SUBSCRIBE_RATE_LIMIT_PER_MINUTE: '10000',
        // Dozens of distinct addresses in a minute are a surge; this suite is about the upstream's faults.
        SUBSCRIBE_SURGE_PER_MINUTE: '100000',
        // Every case reads cold from one address, and reads an issue it has just published.
        READ_BUDGET_PER_MINUTE: '100000',
        READ_BUDGET_PER_CLIENT_PER_MINUTE: '100000',
        INDEX_REFRESH_MIN_SECONDS: '0',
        PORT: String(port),
        HOST: '127.0.0.1',
      },
    });
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the server did not start: ${stdout}${stderr}`)), 15_000);
      const check = () => {
        if (!stdout.includes('listening on')) return;
        clearTimeout(timer);
        resolve();
      };
      child.stdout.on('data', check);
      void exited.then(() => {
        clearTimeout(timer);
        reject(new Error(`the server exited at start: ${stdout}${stderr}`));
      });
      check();
    });
    origin = `http://127.0.0.1:${port}`;
  }, 60_000);

  afterAll(async () => {
    if (child && child.exitCode === null) child.kill('SIGKILL');
    await fault?.stop();
    await trap?.stop();
  });

  /** Runs requests on the given routes at once, with a fresh slug and address each time. */
  async function hitRoutes(routes: readonly Route[]) {
    sequence += 1;
    const slug = `fault-${sequence}`;
    const issue = fault.publish(slug);
    const email = `fault-${sequence}@example.com`;
    const before = fault.requests.length;
    const results = await Promise.all(routes.map((route) => requestFor(origin, route, slug, email)));
    const calls = fault.requestsSince(before);
    const attempts = (route: Route) => calls.filter((call) => upstreamPathOf(route, slug)(call.path)).length;
    return { issue, results, attempts };
  }

  /**
   * After a failing case, reads are paused for a second or two: a read of an unknown slug is
   * answered 503 with Retry-After until then, and waited out as a client would (bounded). The
   * probe that finally gets its 404 is an answered call: the failure streak ends with it.
   */
  async function waitOutReadPause(): Promise<void> {
    for (let round = 0; round < 8; round += 1) {
      const probe = await exchange(origin, 'issue', `/api/issues/pause-probe-${sequence}-${round}`);
      if (probe.status !== 503) return;
      await new Promise((resolve) => setTimeout(resolve, Number(probe.headers.get('retry-after')) * 1000));
    }
    throw new Error('reads were still paused after eight waits');
  }

  // Every case starts against a healthy upstream with no pause left by the case before it, so a
  // case that fails cannot make the ones after it fail too.
  beforeEach(async () => {
    fault.setMode({ kind: 'ok' });
    await waitOutReadPause();
  }, 60_000);

  /**
   * The upstream answers again and the service reads it: a subscribe, and an issue read by slug
   * (one the upstream does not have: an issue that opens reads the archive index for its
   * neighbours and keeps it, and the next case needs the archive cold).
   */
  async function expectStillServing(): Promise<void> {
    fault.setMode({ kind: 'ok' });
    await waitOutReadPause();
    const { results } = await hitRoutes(['subscribe']);
    expect(results[0]!.status).toBe(200);
    expect(results[0]!.json).toEqual({ ok: true, data: { accepted: true } });
    const before = fault.requests.length;
    const missing = await exchange(origin, 'issue', `/api/issues/never-published-${sequence}`);
    expectErrorEnvelope(missing, 404, 'NOT_FOUND');
    // Asked by slug, or (once an archive index is kept) settled by refreshing the index.
    const calls = fault.requestsSince(before).map((call) => call.path);
    expect(calls.length).toBeGreaterThan(0);
    for (const path of calls)
      expect(path === `/v1/newsletter/issues/by-slug/never-published-${sequence}` || upstreamPathOf('archive', '')(path)).toBe(true);
    expect(child.exitCode).toBeNull();
  }

  it.each(FAULT_CASES)(
    'answers $status within the budget when the upstream $when, leaves no socket hanging and stays up',
    async ({ mode, status: expected, orTimeout, getAttempts, archiveAttempts, postAttempts, subscribeSucceeds, failing }) => {
      fault.setMode(mode(trap.origin));
      const { results, attempts } = await hitRoutes(ALL_ROUTES);
      // A failure that pauses reads (a 5xx, no answer in time) may land before another route's
      // call goes out: that route is then answered from the pause, without its call.
      const pauses = failing === true || (orTimeout === true && results.some((result) => result.status === 503));
      for (const result of results) {
        if (subscribeSucceeds && result.route === 'subscribe') {
          expect(result.json).toEqual({ ok: true, data: { accepted: true } });
          continue;
        }
        const calls =
          result.route === 'subscribe' ? postAttempts : result.route === 'archive' ? (archiveAttempts ?? getAttempts) : getAttempts;
        if (pauses && result.route !== 'subscribe' && isPaused(result)) {
          expectErrorEnvelope(result, 503, 'UPSTREAM_UNAVAILABLE');
          expectWithinBudget(result);
          expect(attempts(result.route), `${result.route} upstream calls`).toBeLessThanOrEqual(calls);
          continue;
        }
        const status = orTimeout && result.status === 503 ? 503 : expected;
        expectErrorEnvelope(result, status, status === 503 ? 'UPSTREAM_UNAVAILABLE' : 'UPSTREAM_ERROR');
        expectWithinBudget(result);
        if (status === 503) expect(result.headers.get('retry-after')).toBe(TIMEOUT_RETRY_AFTER);
        else expect(result.headers.get('retry-after')).toBeNull();
        if (orTimeout && result.status === 503) expect(attempts(result.route), `${result.route} upstream calls`).toBeLessThanOrEqual(calls);
        else expect(attempts(result.route), `${result.route} upstream calls`).toBe(calls);
      }
      // The pause follows a failure the upstream was actually asked for.
      if (failing) expect(attempts('archive') + attempts('categories') + attempts('issue')).toBeGreaterThan(0);
      // No answer the upstream began is left open: the service closed what it walked away from.
      await fault.settled();
      expect(fault.pendingResponses()).toBe(0);
      // Idle keep-alive connections are fine; one per concurrent request at most, never a pile-up.
      expect(fault.openConnections()).toBeLessThanOrEqual(ALL_ROUTES.length * 2);
      expect(trap.contacts()).toBe(0);
      await expectStillServing();
    },
  );

  it('serves good answers through latency below the timeout', async () => {
    fault.setMode({ kind: 'latency', ms: 150 });
    const { issue, results } = await hitRoutes(['issue', 'subscribe']);
    expectGoodIssue(results[0]!, issue);
    expect(results[1]!.status).toBe(200);
    for (const result of results) expect(result.ms).toBeGreaterThanOrEqual(140);
    for (const result of results) expectWithinBudget(result);
  });

  it('serves all four routes with only the public fields once the upstream recovers', async () => {
    fault.setMode({ kind: 'ok' });
    const { issue: published, results } = await hitRoutes(ALL_ROUTES);
    const [issue, archive, categories, subscribe] = results;
    expectGoodIssue(issue!, published);
    expect(archive!.status).toBe(200);
    const total = fault.demo.issues.filter((candidate) => candidate.status === 'sent' && candidate.isPublic && candidate.slug).length;
    expect(archive!.json).toMatchObject({ ok: true, meta: { limit: 2, offset: 0 } });
    // The index an issue read of the case before kept (fresh, so served) may predate the issue just published.
    expect([total - 1, total]).toContain((archive!.json as { meta: { total: number } }).meta.total);
    expect((archive!.json as { data: unknown[] }).data).toHaveLength(2);
    // Counted in the same index the archive answered from (with the issue just published or not).
    const indexed =
      (archive!.json as { meta: { total: number } }).meta.total === total
        ? fault.demo.issues
        : fault.demo.issues.filter((c) => c !== published);
    const count = (slug: string) => indexed.filter((c) => c.status === 'sent' && c.isPublic && c.slug && c.category?.slug === slug).length;
    const names = fault.demo.categories
      .map(({ name, slug }) => ({ name, slug, count: count(slug) }))
      .sort((a, b) => a.name.localeCompare(b.name));
    expect(categories!.json).toEqual({ ok: true, data: names });
    expect(subscribe!.json).toEqual({ ok: true, data: { accepted: true } });
    for (const result of results) expect(result.headers.get('set-cookie')).toBeNull();
  });

  it('answers 404 for a slug the upstream does not know, with no by-slug call once the archive index is kept', async () => {
    fault.setMode({ kind: 'ok' });
    await exchange(origin, 'archive', '/api/issues?limit=2');
    const before = fault.requests.length;
    const first = await exchange(origin, 'issue', '/api/issues/missing-issue');
    const second = await exchange(origin, 'issue', '/api/issues/missing-issue');
    expectErrorEnvelope(first, 404, 'NOT_FOUND');
    expectErrorEnvelope(second, 404, 'NOT_FOUND');
    // The archive is loaded: each 404 at most refreshed its index (this server refreshes it
    // without a minimum interval), and nothing asked for the slug itself.
    const calls = fault.requestsSince(before);
    expect(calls.filter((call) => call.path.includes('/by-slug/'))).toHaveLength(0);
    expect(calls.every((call) => upstreamPathOf('archive', '')(call.path))).toBe(true);
  });

  it.each(MALFORMED_REQUESTS)('survives a malformed request on the wire ($name) without a 5xx, and stays up', async ({ raw }) => {
    const port = Number(new URL(origin).port);
    const before = fault.requests.length;
    const answer = await sendRaw(port, raw);
    const status = /^HTTP\/1\.[01] (\d{3})/.exec(answer)?.[1];
    // Either Node's parser refused it (400, 431 …) or the service answered; never a 5xx, never a hang.
    if (status !== undefined) expect(Number(status), answer.slice(0, 300)).toBeLessThan(500);
    leaks.scan(`raw ${raw.slice(0, 40)}`, answer);
    expect(fault.requestsSince(before).filter((call) => call.method === 'POST')).toHaveLength(0);
    await expectStillServing();
  });

  // Last of the socket cases: after a 429 the service holds off for Retry-After seconds.
  it('answers 503 with the upstream Retry-After on a 429, then holds off without calling the upstream', async () => {
    fault.setMode({ kind: 'rate-limited', retryAfter: '7' });
    const first = await hitRoutes(['issue']);
    expectErrorEnvelope(first.results[0]!, 503, 'UPSTREAM_UNAVAILABLE');
    expect(first.results[0]!.headers.get('retry-after')).toBe('7');
    // The slug is not in the kept index: the one call refreshed the index, and its 429 held off the by-slug read.
    expect(first.attempts('issue')).toBe(0);
    expect(first.attempts('archive')).toBe(1);

    const held = await hitRoutes(['issue', 'subscribe', 'archive', 'categories']);
    const [issue, subscribe, archive, categories] = held.results;
    // Subscribe is not held off by a read's 429: it asks the upstream itself, which answers 429 too.
    for (const result of [issue!, subscribe!]) {
      expectErrorEnvelope(result, 503, 'UPSTREAM_UNAVAILABLE');
      expect(Number(result.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(Number(result.headers.get('retry-after'))).toBeLessThanOrEqual(7);
    }
    // Cached reads are still served from memory while the upstream is held off.
    expect(archive!.status).toBe(200);
    expect(categories!.status).toBe(200);
    expect(held.attempts('issue')).toBe(0);
    expect(held.attempts('subscribe')).toBe(1);
    await fault.settled();
    expect(child.exitCode).toBeNull();
  });

  it('never called another host, never passed on a visitor header, and stops cleanly with every upstream socket closed', async () => {
    expect(trap.contacts()).toBe(0);
    expectOnlyOurHeadersUpstream(fault);
    child.kill('SIGTERM');
    const code = await Promise.race([exited, new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), 12_000))]);
    expect(code).toBe(0);
    await fault.drained();
    expect(fault.openConnections()).toBe(0);
    // Production mode serves no site, so nothing looks for examples/ beside this suite's build.
    expect(stderr.split('\n').filter((line) => line !== '')).toEqual([]);
    // Only the lines themselves on failure, not the whole log.
    expect(stdout.split('\n').filter((line) => line.includes('unhandled_error'))).toEqual([]);
    // The failures were logged (and are scanned below), and the shutdown flushed the buffer.
    expect(stdout).toContain('"event":"upstream_failure"');
    expect(stdout).toContain('"event":"cache_stats"');
    // Every log line of the run.
    for (const line of stdout.split('\n').filter(Boolean)) leaks.scan('server log', line);
  }, 20_000);
});

describe('stale content under upstream faults (in-process service, fake clock, real sockets)', () => {
  const TTL_SECONDS = 1;
  const SWR_SECONDS = 300;
  const STALE_IF_ERROR_SECONDS = 86_400;
  let fault: FaultUpstream;
  let server: ServerType;
  let origin = '';
  let trap: Awaited<ReturnType<typeof startTrapListener>>;
  let current: { fetch: (request: Request) => Response | Promise<Response> } | undefined;

  beforeAll(async () => {
    fault = await startFaultUpstream();
    trap = await startTrapListener();
    await new Promise<void>((resolve) => {
      server = serve({ fetch: (request) => current!.fetch(request), hostname: '127.0.0.1', port: 0 }, (info) => {
        origin = `http://127.0.0.1:${info.port}`;
        resolve();
      });
    });
  });

  afterAll(async () => {
    await fault?.settled().catch(() => undefined);
    if (server && 'closeAllConnections' in server) server.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    await fault?.stop();
    await trap?.stop();
  });

  /** A fresh service (empty cache) on the shared socket, with the real fetch and a fake clock. */
  function freshService() {
    const clock = createFakeClock();
    const config = testConfig({
      NEWSLETTER_API_KEY: LEAK_API_KEY,
      NEWSLETTER_API_BASE_URL: fault.baseUrl,
      CACHE_TTL_SECONDS: String(TTL_SECONDS),
      UPSTREAM_TIMEOUT_MS: String(TIMEOUT_MS),
    });
    const upstream = createUpstreamClient({
      baseUrl: fault.baseUrl,
      apiKey: LEAK_API_KEY,
      timeoutMs: TIMEOUT_MS,
      now: clock.now,
    });
    const log = createLogger({ write: (line) => logLines.push(line), now: clock.now });
    current = createApp({ config, upstream, now: clock.now, log }).app;
    return clock;
  }

  async function warm(slug: string): Promise<Exchange[]> {
    fault.setMode({ kind: 'ok' });
    if (!fault.demo.issues.some((issue) => issue.slug === slug)) fault.publish(slug);
    const warmed = await Promise.all([
      exchange(origin, 'issue', `/api/issues/${slug}`),
      exchange(origin, 'archive', '/api/issues'),
      exchange(origin, 'categories', '/api/categories'),
    ]);
    for (const result of warmed) {
      expect(result.status).toBe(200);
      expect(result.headers.get('x-cache')).toBe('MISS');
    }
    return warmed;
  }

  function readAgain(slug: string): Promise<Exchange[]> {
    return Promise.all([
      exchange(origin, 'issue', `/api/issues/${slug}`),
      exchange(origin, 'archive', '/api/issues'),
      exchange(origin, 'categories', '/api/categories'),
    ]);
  }

  it.each(FAULT_CASES)('serves the stale copy within the budget when the cache has expired and the upstream $when', async ({ mode }) => {
    const clock = freshService();
    const slug = 'stale-issue';
    const warmed = await warm(slug);
    fault.setMode(mode(trap.origin));
    // Past freshness and past stale-while-revalidate: only stale-if-error can answer now.
    clock.advance((TTL_SECONDS + SWR_SECONDS + 1) * 1000);
    const stale = await readAgain(slug);
    for (const [index, result] of stale.entries()) {
      expect(result.status, result.body.slice(0, 200)).toBe(200);
      expect(result.headers.get('x-cache')).toBe('STALE');
      expect(result.body).toBe(warmed[index]!.body);
      expect(result.headers.get('etag')).toBe(warmed[index]!.headers.get('etag'));
      expectWithinBudget(result);
    }
    await fault.settled();
    expect(trap.contacts()).toBe(0);
  });

  it('serves the stale copy at once while one background refresh waits on a hanging upstream', async () => {
    const clock = freshService();
    const slug = 'swr-issue';
    const warmed = await warm(slug);
    fault.setMode({ kind: 'hang' });
    clock.advance((TTL_SECONDS + 1) * 1000);
    const before = fault.requests.length;
    const reads = await Promise.all(Array.from({ length: 5 }, () => exchange(origin, 'issue', `/api/issues/${slug}`)));
    for (const result of reads) {
      expect(result.status).toBe(200);
      expect(result.headers.get('x-cache')).toBe('STALE');
      expect(result.body).toBe(warmed[0]!.body);
    }
    // Every answer arrived while the one refresh was still hanging upstream: none waited for it.
    // The refresh runs behind the answers, so its request may reach the fake just after them.
    // It reads the archive index first; that one timing out begins a back-off pause
    // (docs/upstream.md), so the issue is not read by slug until the pause ends: the stale copy stays.
    await fault.pending(1);
    expect(fault.pendingResponses()).toBe(1);
    await fault.settled();
    const calls = fault.requestsSince(before);
    expect(calls.filter((call) => call.path.startsWith('/v1/newsletter/issues?'))).toHaveLength(1);
    expect(calls.filter((call) => call.path.includes('/by-slug/'))).toHaveLength(0);
  });

  it('refuses a streamed 20 MB body at the 16 MB cap, without waiting for the rest', async () => {
    const upstream = createUpstreamClient({ baseUrl: fault.baseUrl, apiKey: LEAK_API_KEY, timeoutMs: 15_000 });
    fault.setMode({ kind: 'huge-body', bytes: TWENTY_MB, declareLength: false });
    const before = fault.requests.length;
    const error = await upstream.getIssueBySlug('huge').then(
      () => undefined,
      (reason: unknown) => reason,
    );
    expect(error).toMatchObject({ name: 'UpstreamError', kind: 'bad_response', status: 200 });
    // Only this read's calls: a retry of an earlier test's hanging refresh may land meanwhile.
    expect(fault.requestsSince(before).filter((call) => call.path.endsWith('/by-slug/huge'))).toHaveLength(1);
    // The rest of the body is not read: the connection is dropped, not drained.
    await fault.settled();
  });

  it('serves no copy older than a day: past stale-if-error a hanging upstream is a 503', async () => {
    const clock = freshService();
    await warm('old-issue');
    fault.setMode({ kind: 'hang' });
    clock.advance((TTL_SECONDS + STALE_IF_ERROR_SECONDS + 1) * 1000);
    const result = await exchange(origin, 'issue', '/api/issues/old-issue');
    expectErrorEnvelope(result, 503, 'UPSTREAM_UNAVAILABLE');
    expectWithinBudget(result);
    await fault.settled();
  });
});

describe('leak scan', () => {
  it('would notice: a raw upstream answer trips every kind of rule', async () => {
    const upstream = await startFaultUpstream();
    try {
      const headers = { Authorization: `Bearer ${LEAK_API_KEY}` };
      const slug = upstream.demo.issues.find((candidate) => candidate.status === 'sent' && candidate.isPublic)!.slug!;
      const issue = await fetch(`${upstream.baseUrl}/newsletter/issues/by-slug/${slug}`, { headers });
      const found = findLeaks(responseText(issue, await issue.text()));
      for (const label of [
        'workspace id',
        'account set id',
        'creator id',
        'internal field deliveredCount',
        'contentJson body',
        'upstream Set-Cookie',
        'upstream header name',
      ]) {
        expect(found).toContain(label);
      }
      upstream.setMode({ kind: 'status-storm', statuses: [500] });
      const failure = await fetch(`${upstream.baseUrl}/newsletter/categories`, { headers });
      expect(findLeaks(await failure.text())).toContain('upstream error text');
      expect(findLeaks(`Authorization: Bearer ${LEAK_API_KEY}`)).toContain('API key');
      expect(findLeaks('Error: boom\n    at handle (file:///srv/dist/core/app.js:12:7)')).toContain('stack trace');
    } finally {
      await upstream.stop();
    }
  });

  it('finds no key, internal field, upstream header, upstream text or stack trace in any response or log line above', () => {
    for (const line of logLines) leaks.scan('in-process log', line);
    expect(leaks.scanned()).toBeGreaterThan(100);
    expect(leaks.findings()).toEqual([]);
  });
});
