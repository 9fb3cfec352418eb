import type { Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { serveWithLimits, type ServerLimits } from '../src/node-server-limits.js';
import { closeServer, createTestApp } from './helpers.js';

// Real sockets on 127.0.0.1 with small limits, so each rule is seen as a client sees it.

const servers: Server[] = [];
const sockets: Socket[] = [];

afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  for (const server of servers.splice(0)) await closeServer(server);
});

const SMALL_LIMITS: ServerLimits = {
  maxConnections: 4,
  headersTimeoutMs: 300,
  requestTimeoutMs: 600,
  connectionsCheckingIntervalMs: 50,
  drainTimeoutMs: 500,
};

/** The real app behind the real listener, on a free loopback port. */
async function listen(limits: Partial<ServerLimits> = {}, env: Record<string, string> = {}) {
  const test = createTestApp({ env });
  let port = 0;
  const server = await new Promise<Server>((resolve) => {
    const created = serveWithLimits({ fetch: test.app.fetch, hostname: '127.0.0.1', port: 0 }, { ...SMALL_LIMITS, ...limits }, (info) => {
      port = info.port;
      resolve(created);
    });
  });
  servers.push(server);
  return { ...test, server, port };
}

/** A raw client: what it received, whether the server closed cleanly (FIN) or reset, and when. */
async function open(port: number) {
  const socket = connect(port, '127.0.0.1');
  sockets.push(socket);
  let received = '';
  let error: NodeJS.ErrnoException | undefined;
  let isClosed = false;
  socket.on('close', () => (isClosed = true));
  socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
  socket.on('error', (e) => (error = e));
  const closed = new Promise<number>((resolve) => socket.on('close', () => resolve(performance.now())));
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  const connectedAt = performance.now();
  return {
    socket,
    connectedAt,
    closed,
    received: () => received,
    error: () => error,
    /** Resolves once `count` whole responses (each with Content-Length) have arrived. */
    responses: (count: number) =>
      new Promise<string[]>((resolve, reject) => {
        const check = () => {
          const parsed = splitResponses(received);
          if (parsed.length >= count) {
            socket.off('data', check);
            resolve(parsed);
          }
        };
        const closedEarly = () => reject(new Error(`closed after: ${received}`));
        socket.on('data', check);
        socket.once('close', closedEarly);
        check();
        if (isClosed) closedEarly();
      }),
  };
}

/** Whole HTTP/1.1 responses in `text`, each delimited by its Content-Length. */
function splitResponses(text: string): string[] {
  const out: string[] = [];
  let rest = text;
  for (let guard = 0; guard < 100; guard += 1) {
    const headEnd = rest.indexOf('\r\n\r\n');
    if (headEnd < 0) break;
    const length = Number(/\r\ncontent-length: (\d+)/i.exec(rest.slice(0, headEnd))?.[1] ?? 0);
    if (rest.length < headEnd + 4 + length) break;
    out.push(rest.slice(0, headEnd + 4 + length));
    rest = rest.slice(headEnd + 4 + length);
  }
  return out;
}

const statusOf = (response: string | undefined) => Number(response?.slice(9, 12));
const hasConnectionClose = (response: string | undefined) => /\r\nconnection: close\r\n/i.test(response ?? '');
const GET_CATEGORIES = 'GET /api/categories HTTP/1.1\r\nHost: bff.test\r\n\r\n';

function post(headers: Record<string, string | number>, body = ''): string {
  const lines = Object.entries({ Host: 'bff.test', ...headers }).map(([name, value]) => `${name}: ${value}`);
  return `POST /api/subscribe HTTP/1.1\r\n${lines.join('\r\n')}\r\n\r\n${body}`;
}

/** `body` as chunks of `size` bytes, and the terminating chunk unless `finish` is false. */
function chunked(body: string, size: number, finish = true): string {
  let out = '';
  for (let at = 0; at < body.length; at += size) {
    const piece = body.slice(at, at + size);
    out += `${piece.length.toString(16)}\r\n${piece}\r\n`;
  }
  return finish ? `${out}0\r\n\r\n` : out;
}

describe('the connection cap', () => {
  it('refuses a connection past MAX_CONNECTIONS at once and goes on serving the ones it holds', async () => {
    const { server, port } = await listen({ maxConnections: 4 });
    const held = [];
    for (let index = 0; index < 4; index += 1) held.push(await open(port));
    await until(async () => (await connectionsOf(server)) === 4);

    const refused = await open(port);
    const refusedAfterMs = (await refused.closed) - refused.connectedAt;
    expect(refused.received()).toBe('');
    expect(refusedAfterMs).toBeLessThan(250);

    held[0]!.socket.write(GET_CATEGORIES);
    expect(statusOf((await held[0]!.responses(1))[0])).toBe(200);
  });
});

describe('timeouts', () => {
  it('cuts off a client that trickles its headers once the headers timeout has passed', async () => {
    const { port } = await listen({ headersTimeoutMs: 300, requestTimeoutMs: 600, connectionsCheckingIntervalMs: 50 });
    const client = await open(port);
    client.socket.write('GET /api/categories HTTP/1.1\r\nHost: bff.test\r\n');
    let stillOpen = true;
    void client.closed.then(() => (stillOpen = false));
    // One header line every 50 ms: each byte arrives in time, the whole head never does.
    for (let line = 0; line < 40 && stillOpen; line += 1) {
      client.socket.write(`X-Slow-${line}: 1\r\n`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const closedAfterMs = (await client.closed) - client.connectedAt;
    expect(closedAfterMs).toBeGreaterThanOrEqual(250);
    expect(closedAfterMs).toBeLessThan(300 + 50 + 250);
    expect(client.received()).toMatch(/^HTTP\/1\.1 408 /);
  });
});

describe('answers sent before the body was read', () => {
  it.each([
    ['413 for a declared length over the limit', { 'Content-Type': 'application/json' }, 'x'.repeat(9 * 1024), 413],
    ['415 for an unsupported type', { 'Content-Type': 'text/plain' }, 'hello', 415],
    ['403 for a foreign origin', { 'Content-Type': 'application/json', Origin: 'https://evil.example' }, '{}', 403],
  ])('keep the connection after a %s: the next request on it is answered', async (_label, headers, body, status) => {
    const { port } = await listen();
    const client = await open(port);
    // The head alone: the answer comes before the body has been sent at all.
    client.socket.write(post({ ...headers, 'Content-Length': body.length }));
    const [early] = await client.responses(1);
    expect(statusOf(early)).toBe(status);
    expect(hasConnectionClose(early)).toBe(false);
    client.socket.write(body);
    client.socket.write(GET_CATEGORIES);
    const [, next] = await client.responses(2);
    expect(statusOf(next)).toBe(200);
    expect(client.error()).toBeUndefined();
  });

  it('keep the connection when the body arrives well after the answer, within the drain time', async () => {
    const { port } = await listen({ requestTimeoutMs: 3000, drainTimeoutMs: 2000 });
    const client = await open(port);
    client.socket.write(post({ 'Content-Type': 'text/plain', 'Content-Length': 5 }));
    expect(statusOf((await client.responses(1))[0])).toBe(415);
    // Longer than @hono/node-server's own 500 ms drain, which closed the socket under the client.
    await new Promise((resolve) => setTimeout(resolve, 700));
    client.socket.write(`hello${GET_CATEGORIES}`);
    expect(statusOf((await client.responses(2))[1])).toBe(200);
    expect(client.error()).toBeUndefined();
  });

  it('answer a chunked post over the rate limit with 429 at once, before its body ends, then close without a reset', async () => {
    const { port } = await listen({}, { SUBSCRIBE_RATE_LIMIT_PER_MINUTE: '1' });
    const first = await open(port);
    const json = '{"email":"jane@example.com","optInAttestation":true}';
    first.socket.write(post({ 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' }, chunked(json, 16)));
    expect(statusOf((await first.responses(1))[0])).toBe(200);

    const second = await open(port);
    second.socket.write(post({ 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' }, chunked(json, 16, false)));
    const [limited] = await second.responses(1);
    expect(statusOf(limited)).toBe(429);
    expect(hasConnectionClose(limited)).toBe(true);
    // The client goes on sending the body it had started; the server reads it, then closes cleanly.
    second.socket.end('0\r\n\r\n');
    await second.closed;
    expect(second.error()).toBeUndefined();
  });

  it('answer a chunked body over the size limit with 413 and Connection: close, read whole by the client', async () => {
    const { port } = await listen();
    const client = await open(port);
    client.socket.write(post({ 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' }, chunked('x'.repeat(20 * 1024), 1024)));
    const [tooLarge] = await client.responses(1);
    expect(statusOf(tooLarge)).toBe(413);
    expect(hasConnectionClose(tooLarge)).toBe(true);
    expect(tooLarge).toContain('"PAYLOAD_TOO_LARGE"');
    await client.closed;
    expect(client.error()).toBeUndefined();
  });

  it('close a connection whose client stops sending the rest of a small body after the drain time', async () => {
    const { port } = await listen({ drainTimeoutMs: 200 });
    const client = await open(port);
    client.socket.write(post({ 'Content-Type': 'text/plain', 'Content-Length': 100 }, 'only part'));
    expect(statusOf((await client.responses(1))[0])).toBe(415);
    const answeredAt = performance.now();
    expect((await client.closed) - answeredAt).toBeLessThan(200 + 250);
  });
});

describe('a body cut off by the client', () => {
  it('is logged once, at info, as a 499 client abort and never as an unhandled error', async () => {
    const { port, logs, server } = await listen();
    const handling = new Promise((resolve) => server.once('request', resolve));
    const client = await open(port);
    client.socket.write(post({ 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' }, chunked('{"email":"ja', 4, false)));
    await handling;
    client.socket.destroy();
    await until(async () => logs.entries().some((entry) => entry.event === 'request'));
    const lines = logs.entries();
    expect(lines.filter((entry) => entry.event === 'unhandled_error')).toEqual([]);
    expect(lines.filter((entry) => entry.event === 'request')).toEqual([expect.objectContaining({ level: 'info', status: 499 })]);
  });
});

function connectionsOf(server: Server): Promise<number> {
  return new Promise((resolve, reject) => server.getConnections((error, count) => (error ? reject(error) : resolve(count))));
}

/** Waits (bounded: `rounds` × 20 ms) until `condition` holds; returns whether it did. */
async function until(condition: () => Promise<boolean>, rounds = 100): Promise<boolean> {
  for (let round = 0; round < rounds; round += 1) {
    if (await condition()) return true;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return false;
}
