import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createServer as createHttpServer, request, type ServerResponse } from 'node:http';
import { connect, createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { redisServerAvailable, startRedisServer } from './redis/support.js';
import { freePort, twoFreePorts } from './free-port.js';
import { createArchive } from './support/fake-upstream/archive.js';
import { startFakeUpstreamServer } from './support/fake-upstream/server.js';
import { startHookReceiver } from './support/hook-receiver.js';

const root = fileURLToPath(new URL('..', import.meta.url));
// The entry runs as `npm start` runs it: compiled into dist/ (by test/build-dist.ts), started by the CLI.
const entry = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const children: ChildProcessWithoutNullStreams[] = [];

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

function start(env: Record<string, string>) {
  const child = spawn(process.execPath, [entry], { cwd: root, env: { PATH: process.env.PATH ?? '', ...env } });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    child,
    exited,
    output: () => ({ stdout, stderr }),
    /** Resolves when stdout contains `text`; gives up after a bounded wait. */
    waitFor: (text: string) =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no "${text}" in output: ${stdout}${stderr}`)), 15_000);
        const check = () => {
          if (stdout.includes(text)) {
            clearTimeout(timer);
            resolve();
          }
        };
        child.stdout.on('data', check);
        check();
      }),
  };
}

describe('Node entry', () => {
  it('exits 2 with one line naming each bad variable, never echoing the key', async () => {
    const key = 'fake-secret-key-4b1d9e';
    const run = start({ NEWSLETTER_API_KEY: key, NEWSLETTER_API_BASE_URL: 'nope', PORT: 'eighty' });
    expect(await run.exited).toBe(2);
    const { stdout, stderr } = run.output();
    expect(stderr).toMatch(/^config error: NEWSLETTER_API_BASE_URL .+$/m);
    expect(stderr).toMatch(/^config error: PORT .+$/m);
    expect(stdout + stderr).not.toContain(key);
  });

  it('refuses to start in production without an API key, exiting 2', async () => {
    const run = start({ NODE_ENV: 'production' });
    expect(await run.exited).toBe(2);
    expect(run.output().stderr).toContain('config error: NEWSLETTER_API_KEY is required when NODE_ENV=production');
  });

  it('serves the demo archive with a banner, and stops cleanly on SIGTERM', async () => {
    const port = await freePort();
    const run = start({ PORT: String(port), HOST: '127.0.0.1' });
    await run.waitFor('listening on');
    expect(run.output().stdout).toContain('DEMO MODE');

    const response = await fetch(`http://127.0.0.1:${port}/api/issues?limit=3`);
    expect(response.status).toBe(200);
    const body = (await response.json()) as { ok: boolean; data: unknown[]; meta: { total: number } };
    expect(body.ok).toBe(true);
    expect(body.data).toHaveLength(3);
    expect(body.meta.total).toBeGreaterThanOrEqual(40);

    // Two fresh hits: with the default ACCESS_LOG=summary, no line each, counted in the summary written on the way out.
    for (let i = 0; i < 2; i += 1) expect((await fetch(`http://127.0.0.1:${port}/api/issues?limit=3`)).headers.get('x-cache')).toBe('HIT');

    run.child.kill('SIGTERM');
    expect(await run.exited).toBe(0);
    const lines = run
      .output()
      .stdout.split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines.filter((line) => line.event === 'request').map(({ path, cache }) => ({ path, cache }))).toEqual([
      { path: '/api/issues', cache: 'MISS' },
    ]);
    expect(lines.filter((line) => line.event === 'cache_hits')).toEqual([
      expect.objectContaining({ level: 'info', method: 'GET', route: '/api/issues', status: 200, cache: 'HIT', requests: 2 }),
    ]);
    expect(lines.at(-1)?.event).toBe('cache_hits');
    expect(run.output().stdout).toContain('"event":"cache_stats"');
  });

  it('writes a request line for every request with ACCESS_LOG=all', async () => {
    const port = await freePort();
    const run = start({ PORT: String(port), HOST: '127.0.0.1', ACCESS_LOG: 'all' });
    await run.waitFor('listening on');
    for (let i = 0; i < 3; i += 1) expect((await fetch(`http://127.0.0.1:${port}/api/categories`)).status).toBe(200);
    run.child.kill('SIGTERM');
    expect(await run.exited).toBe(0);
    const lines = run
      .output()
      .stdout.split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines.filter((line) => line.event === 'request').map((line) => line.cache)).toEqual(['MISS', 'HIT', 'HIT']);
    expect(lines.filter((line) => line.event === 'cache_hits')).toEqual([]);
  });

  it("renders the demo site's search page from its own read of the archive, whatever the page request's headers", async () => {
    const port = await freePort();
    const run = start({ PORT: String(port), HOST: '127.0.0.1' });
    await run.waitFor('listening on');
    const browser = { Accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8', 'Accept-Encoding': 'br, gzip' };
    // An empty search is the whole archive, whose pages are kept compressed: the browser's headers
    // are the page's, not the in-process read's (a compressed answer would not read as JSON).
    for (const q of ['the', '']) {
      const api = (await (await fetch(`http://127.0.0.1:${port}/api/issues?q=${q}&limit=10`, { headers: browser })).json()) as {
        meta: { total: number };
      };
      const page = await fetch(`http://127.0.0.1:${port}/?q=${q}`, { headers: browser });
      expect(page.status).toBe(200);
      const html = await page.text();
      expect(html).not.toContain('could not be searched');
      expect(html).toContain(q ? `${api.meta.total} issues match` : `${api.meta.total} issues ·`);
    }
    run.child.kill('SIGTERM');
    expect(await run.exited).toBe(0);
  });

  it('serves /healthz, /readyz and /metrics on ADMIN_PORT only, none of them on PORT, and stops on SIGTERM', async () => {
    const [port, adminPort] = await twoFreePorts();
    const run = start({ PORT: String(port), HOST: '127.0.0.1', ADMIN_PORT: String(adminPort) });
    await run.waitFor(`admin (/healthz, /readyz, /metrics) on http://127.0.0.1:${adminPort}`);
    await run.waitFor('listening on');
    expect((await fetch(`http://127.0.0.1:${port}/api/categories`)).status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${port}/metrics`)).status).toBe(404);
    expect(await (await fetch(`http://127.0.0.1:${adminPort}/healthz`)).text()).toBe('ok\n');
    expect((await fetch(`http://127.0.0.1:${adminPort}/readyz`)).status).toBe(200);
    const metrics = await (await fetch(`http://127.0.0.1:${adminPort}/metrics`)).text();
    expect(metrics).toContain('newsletter_bff_http_requests_total{route="/api/categories",method="GET",status="200"} 1');
    expect(metrics).toContain('process_cpu_seconds_total');
    run.child.kill('SIGTERM');
    await run.waitFor('"event":"shutting_down"');
    expect(await run.exited).toBe(0);
  });

  it('watches the archive on its own with DEPLOY_HOOK_URL: a new issue reaches the build hook with no visitor request', async () => {
    const key = 'node-entry-watch-key-not-real';
    const upstream = await startFakeUpstreamServer({ apiKey: key, publication: createArchive({ issues: 20, contentBytes: 500 }) });
    const receiver = await startHookReceiver();
    try {
      const port = await freePort();
      const run = start({
        PORT: String(port),
        HOST: '127.0.0.1',
        NEWSLETTER_API_KEY: key,
        NEWSLETTER_API_BASE_URL: upstream.baseUrl,
        CACHE_TTL_SECONDS: '1',
        DEPLOY_HOOK_URL: receiver.url,
      });
      await run.waitFor('"event":"archive_watch_started"');
      upstream.publish('sent-while-nobody-reads');
      // Real time is the point: the timer's ticks. A TTL of 1 s, a tick a second: bounded at 10 s.
      for (let waited = 0; waited < 10_000 && receiver.calls.length === 0; waited += 100)
        await new Promise((resolve) => setTimeout(resolve, 100));
      expect(receiver.calls.map((call) => call.body?.changes)).toEqual([[{ slug: 'sent-while-nobody-reads', kind: 'new' }]]);
      run.child.kill('SIGTERM');
      expect(await run.exited).toBe(0);
      const { stdout, stderr } = run.output();
      expect(stdout).toContain('"event":"deploy_hook_called"');
      expect(stdout + stderr).not.toContain(receiver.token);
      expect(stdout + stderr).not.toContain(key);
      expect(stdout).not.toContain('"event":"request"');
    } finally {
      await receiver.stop();
      await upstream.stop();
    }
  });

  it('exits 1 with one line when its port is already taken', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    try {
      const port = (blocker.address() as { port: number }).port;
      const run = start({ PORT: String(port), HOST: '127.0.0.1' });
      expect(await run.exited).toBe(1);
      expect(run.output().stderr).toBe(`newsletter-bff could not listen on 127.0.0.1 port ${port}: the port is already in use\n`);
    } finally {
      await new Promise<void>((resolve) => blocker.close(() => resolve()));
    }
  });

  it('on SIGTERM stops accepting, lets the request in flight finish, then exits 0', async () => {
    // An upstream on loopback that holds the categories call until the test lets it answer.
    let held: ServerResponse | undefined;
    let upstreamCalled!: () => void;
    const called = new Promise<void>((resolve) => (upstreamCalled = resolve));
    const upstream = createHttpServer((req, res) => {
      // The archive the categories are counted in answers at once (an empty one).
      if (req.url?.startsWith('/v1/newsletter/issues')) {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ ok: true, data: [] }));
        return;
      }
      held = res;
      upstreamCalled();
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    try {
      const upstreamPort = (upstream.address() as { port: number }).port;
      const port = await freePort();
      const run = start({
        PORT: String(port),
        HOST: '127.0.0.1',
        NEWSLETTER_API_KEY: 'fake-key-9c2e71d0-not-real',
        NEWSLETTER_API_BASE_URL: `http://127.0.0.1:${upstreamPort}/v1`,
      });
      await run.waitFor('listening on');

      const inFlight = fetch(`http://127.0.0.1:${port}/api/categories`);
      await called;
      run.child.kill('SIGTERM');
      await run.waitFor('"event":"shutting_down"');
      // No longer accepting: a new connection is refused while the first request is still open.
      await expect(fetch(`http://127.0.0.1:${port}/api/issues`)).rejects.toThrow();
      expect(run.child.exitCode).toBeNull();

      held!.writeHead(200, { 'Content-Type': 'application/json' });
      held!.end(JSON.stringify({ ok: true, data: [{ id: 'c1', name: 'Essays', slug: 'essays' }] }));
      const response = await inFlight;
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ ok: true, data: [{ name: 'Essays', slug: 'essays', count: 0 }] });
      expect(await run.exited).toBe(0);
    } finally {
      upstream.closeAllConnections();
      await new Promise<void>((resolve) => upstream.close(() => resolve()));
    }
  });

  it('applies the listener limits: a client trickling its headers is cut off with 408 after HEADERS_TIMEOUT_SECONDS', async () => {
    const port = await freePort();
    const run = start({ PORT: String(port), HOST: '127.0.0.1', HEADERS_TIMEOUT_SECONDS: '1', REQUEST_TIMEOUT_SECONDS: '2' });
    await run.waitFor('listening on');
    const socket = connect(port, '127.0.0.1');
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
    socket.on('error', () => {});
    const closed = new Promise<number>((resolve) => socket.on('close', () => resolve(performance.now())));
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    const connectedAt = performance.now();
    socket.write('GET /api/categories HTTP/1.1\r\nHost: bff.test\r\nX-Slow: ');
    // Node checks every 2 s: the cut-off comes between 1 s and 1 + 2 s (plus a margin for a busy machine).
    const closedAfterMs = (await closed) - connectedAt;
    expect(closedAfterMs).toBeGreaterThanOrEqual(900);
    expect(closedAfterMs).toBeLessThan(4500);
    expect(received).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('starts with MAX_CONNECTIONS_PER_CLIENT still set, and says once what the listener does now', async () => {
    const port = await freePort();
    const run = start({ PORT: String(port), HOST: '127.0.0.1', MAX_CONNECTIONS_PER_CLIENT: '64' });
    await run.waitFor('listening on');
    expect((await fetch(`http://127.0.0.1:${port}/api/categories`)).status).toBe(200);
    run.child.kill('SIGTERM');
    expect(await run.exited).toBe(0);
    const lines = run
      .output()
      .stdout.split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines.filter((line) => line.event === 'config_notice')).toEqual([
      expect.objectContaining({
        level: 'warn',
        notice: expect.stringMatching(/^MAX_CONNECTIONS_PER_CLIENT is no longer used: one address may open as many connections/),
      }),
    ]);
  });

  it('answers a Host it cannot read in the JSON envelope, with the security headers and a request line, and counts shed connections from zero', async () => {
    const [port, adminPort] = await twoFreePorts();
    const run = start({ PORT: String(port), HOST: '127.0.0.1', ADMIN_PORT: String(adminPort) });
    await run.waitFor('listening on');
    await run.waitFor('admin (/healthz');
    const socket = connect(port, '127.0.0.1');
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.write('GET /api/categories HTTP/1.1\r\nHost: a b\r\nConnection: close\r\n\r\n');
    await new Promise((resolve) => socket.once('close', resolve));
    expect(received).toMatch(/^HTTP\/1\.1 400 /);
    expect(received).toMatch(/\r\nx-content-type-options: nosniff\r\n/i);
    expect(JSON.parse(received.slice(received.indexOf('\r\n\r\n') + 4))).toEqual({
      ok: false,
      error: { code: 'BAD_REQUEST', message: expect.any(String) },
    });
    const metrics = await (await fetch(`http://127.0.0.1:${adminPort}/metrics`)).text();
    for (const reason of ['idle', 'slow_head', 'over_share'])
      expect(metrics).toContain(`newsletter_bff_connections_shed_total{reason="${reason}"} 0`);
    run.child.kill('SIGTERM');
    expect(await run.exited).toBe(0);
    const lines = run
      .output()
      .stdout.split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines).toContainEqual(expect.objectContaining({ event: 'request', method: 'GET', path: '/api/categories', status: 400 }));
  });

  describe('a subscribe body that never arrives whole', () => {
    /** The JSON lines the server wrote so far. */
    const linesOf = (run: ReturnType<typeof start>) =>
      run
        .output()
        .stdout.split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as Record<string, unknown>);
    /** Sends the head and the first bytes of a body of 100; resolves once Node has handed the request to the app (its 100 Continue). */
    async function startBody(port: number) {
      const socket = connect(port, '127.0.0.1');
      let received = '';
      socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
      socket.on('error', () => {});
      const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
      await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
      socket.write(
        'POST /api/subscribe HTTP/1.1\r\nHost: bff.test\r\nContent-Type: application/json\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n{"email":"ja',
      );
      const continued = new Promise<void>((resolve) => socket.on('data', () => received.includes('100 Continue') && resolve()));
      await continued;
      return { socket, closed, received: () => received };
    }

    it('is logged and counted 499 when the client abandons it, and 408 when the listener times it out, never as a validation failure', async () => {
      const [port, adminPort] = await twoFreePorts();
      const run = start({
        PORT: String(port),
        HOST: '127.0.0.1',
        ADMIN_PORT: String(adminPort),
        HEADERS_TIMEOUT_SECONDS: '1',
        REQUEST_TIMEOUT_SECONDS: '1',
      });
      await run.waitFor(`admin (/healthz, /readyz, /metrics) on http://127.0.0.1:${adminPort}`);
      await run.waitFor('listening on');

      const abandoned = await startBody(port);
      abandoned.socket.destroy();
      await run.waitFor('"status":499');

      const timedOut = await startBody(port);
      await timedOut.closed;
      // Node answered the 408 itself; the log and the metrics say so too.
      expect(timedOut.received()).toMatch(/\r\n\r\nHTTP\/1\.1 408 /);
      await run.waitFor('"status":408');

      const lines = linesOf(run);
      expect(lines.filter((line) => line.event === 'request').map((line) => line.status)).toEqual([499, 408]);
      expect(lines.filter((line) => line.event === 'subscribe')).toEqual([
        expect.objectContaining({ level: 'info', outcome: 'abandoned', reason: 'CLIENT_CLOSED_REQUEST' }),
        expect.objectContaining({ level: 'info', outcome: 'timed_out', reason: 'REQUEST_TIMEOUT' }),
      ]);
      const metrics = await (await fetch(`http://127.0.0.1:${adminPort}/metrics`)).text();
      expect(metrics).toContain('newsletter_bff_http_requests_total{route="/api/subscribe",method="POST",status="499"} 1');
      expect(metrics).toContain('newsletter_bff_http_requests_total{route="/api/subscribe",method="POST",status="408"} 1');
      expect(metrics).toContain('newsletter_bff_subscribe_attempts_total{outcome="abandoned"} 1');
      expect(metrics).toContain('newsletter_bff_subscribe_attempts_total{outcome="timed_out"} 1');
      expect(metrics).toContain('newsletter_bff_subscribe_attempts_total{outcome="rejected"} 0');
      expect(metrics).not.toMatch(/status="422"/);
    });

    it('is answered as usual when the whole body arrives, however slowly (the honest client)', async () => {
      const port = await freePort();
      const run = start({ PORT: String(port), HOST: '127.0.0.1', HEADERS_TIMEOUT_SECONDS: '1', REQUEST_TIMEOUT_SECONDS: '5' });
      await run.waitFor('listening on');
      const body = JSON.stringify({ email: 'slow@example.com', optInAttestation: true }).padEnd(100, ' ');
      const slow = await startBody(port);
      await new Promise((resolve) => setTimeout(resolve, 300));
      slow.socket.end(body.slice('{"email":"ja'.length));
      await slow.closed;
      expect(slow.received()).toMatch(/\r\n\r\nHTTP\/1\.1 200 /);
      await run.waitFor('"event":"subscribe"');
      expect(linesOf(run).filter((line) => line.event === 'subscribe')).toEqual([expect.objectContaining({ outcome: 'forwarded' })]);
    });
  });

  describe('client IP for the subscribe rate limit (TRUST_PROXY_HOPS)', () => {
    /** Starts the demo with a limit of one subscribe a minute per client IP. */
    async function startLimited(trustProxyHops: string) {
      const port = await freePort();
      const run = start({ PORT: String(port), HOST: '127.0.0.1', SUBSCRIBE_RATE_LIMIT_PER_MINUTE: '1', TRUST_PROXY_HOPS: trustProxyHops });
      await run.waitFor('listening on');
      /** Posts from the loopback address `from` (Linux routes all of 127/8 to lo), returning the status. */
      const subscribe = (email: string, forwardedFor: string, from = '127.0.0.1') =>
        new Promise<number | undefined>((resolve, reject) => {
          const body = JSON.stringify({ email, optInAttestation: true });
          const req = request(
            {
              host: '127.0.0.1',
              port,
              localAddress: from,
              method: 'POST',
              path: '/api/subscribe',
              headers: { 'Content-Type': 'application/json', 'X-Forwarded-For': forwardedFor },
            },
            (res) => {
              res.resume();
              res.on('end', () => resolve(res.statusCode));
            },
          );
          req.on('error', reject);
          req.end(body);
        });
      return { run, subscribe };
    }

    it('limits by the socket address with 0 hops, whatever X-Forwarded-For claims', async () => {
      const { subscribe } = await startLimited('0');
      expect(await subscribe('first@example.com', '198.51.100.1', '127.0.0.2')).toBe(200);
      expect(await subscribe('second@example.com', '198.51.100.2', '127.0.0.2')).toBe(429);
      // Another socket address is another client.
      expect(await subscribe('third@example.com', '198.51.100.2', '127.0.0.3')).toBe(200);
    });

    it('limits by the right-most X-Forwarded-For entry with 1 hop', async () => {
      const { subscribe } = await startLimited('1');
      expect(await subscribe('first@example.com', '6.6.6.6, 198.51.100.1')).toBe(200);
      expect(await subscribe('second@example.com', '6.6.6.6, 198.51.100.2')).toBe(200);
      expect(await subscribe('third@example.com', '7.7.7.7, 198.51.100.1')).toBe(429);
    });
  });
});

describe.runIf(redisServerAvailable())('Node entry with REDIS_URL', () => {
  it('connects at start, counts the subscribe limit in Redis, and closes on SIGTERM', async () => {
    const redis = await startRedisServer();
    try {
      const port = await freePort();
      const run = start({ PORT: String(port), HOST: '127.0.0.1', REDIS_URL: redis.url, REDIS_TIMEOUT_MS: '2000' });
      await run.waitFor('listening on');
      await run.waitFor('"event":"redis_connected"');
      const statuses: number[] = [];
      for (let attempt = 0; attempt < 11; attempt += 1) {
        const response = await fetch(`http://127.0.0.1:${port}/api/subscribe`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({ email: `entry${attempt}@example.com`, optInAttestation: true }),
        });
        statuses.push(response.status);
      }
      expect(statuses[10]).toBe(429);
      // The counter lives in Redis: a second process sees the same count. (A long Redis timeout:
      // this is about sharing, and a loaded machine must not turn a slow answer into an outage.)
      const secondPort = await freePort();
      const second = start({ PORT: String(secondPort), HOST: '127.0.0.1', REDIS_URL: redis.url, REDIS_TIMEOUT_MS: '2000' });
      await second.waitFor('listening on');
      const fromSecond = await fetch(`http://127.0.0.1:${secondPort}/api/subscribe`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ email: 'entry-second@example.com', optInAttestation: true }),
      });
      expect(fromSecond.status).toBe(429);
      for (const process of [run, second]) {
        process.child.kill('SIGTERM');
        expect(await process.exited).toBe(0);
      }
    } finally {
      await redis.stop();
    }
  });
});
