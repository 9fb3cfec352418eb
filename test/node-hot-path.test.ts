import { getRequestListener } from '@hono/node-server';
import { createServer, type RequestListener, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNodeBodyEncoder } from '../src/node/compression.js';
import { createNodeHotPath } from '../src/node/hot-path.js';
import { createTestApp } from './helpers.js';
import { createMetricsRecorder } from './metrics-recorder.js';

const KNOWN_SLUG = 'meet-the-rooftop-beekeepers-of-eastside';
const ALLOWED = 'https://site.example';
const HOST = 'bff.example:8443';

interface Row {
  name: string;
  method?: string;
  target: string;
  headers?: Record<string, string>;
  /** Whether the hot path answers it (after one request has warmed the cache). */
  hot: boolean;
  /** HTTP/1.1 unless set. */
  version?: '1.0';
}

/** One HTTP/1.1 request on a fresh loopback socket; resolves with every byte of the answer. */
function rawRequest(port: number, row: Row): Promise<Buffer> {
  return rawExchange(port, [requestHead(row, 'close')]);
}

function requestHead(row: Row, connection: 'close' | 'keep-alive'): string {
  const headers = { Host: HOST, ...row.headers, Connection: connection };
  return `${row.method ?? 'GET'} ${row.target} HTTP/${row.version ?? '1.1'}\r\n${Object.entries(headers)
    .map(([n, v]) => `${n}: ${v}\r\n`)
    .join('')}\r\n`;
}

/** Requests written back to back on one loopback socket (the last asking to close it); every byte of the answers. */
function rawExchange(port: number, heads: string[]): Promise<Buffer> {
  const head = heads.join('');
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    // Written, not ended: the server closes the connection once it has answered (Connection: close).
    const socket = connect({ host: '127.0.0.1', port }, () => socket.write(head));
    socket.setTimeout(5000, () => socket.destroy(new Error(`no answer to ${head.split('\r\n')[0]}`)));
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(chunks)));
  });
}

/**
 * The answer with its `Date` line and a generated request id blanked (the parts that differ by
 * design), and its header lines in order of name: the order of fields with different names
 * carries no meaning (RFC 9110, section 5.3), and Node puts `Content-Length` after its own lines
 * for the adapter but where `writeHead` was given it for the hot path. Lines of one name keep
 * their order (a stable sort).
 */
function comparable(answer: Buffer, row: Row): string {
  const text = answer.toString('latin1');
  const end = text.indexOf('\r\n\r\n');
  const [status, ...lines] = text
    .slice(0, end)
    .split('\r\n')
    .filter((line) => !/^date:/i.test(line));
  const sentId = row.headers?.['X-Request-Id'] !== undefined && /^[\w=-]+$/.test(row.headers['X-Request-Id']);
  const head = lines.map((line) => (/^x-request-id:/i.test(line) && !sentId ? 'X-Request-Id: <generated>' : line));
  const nameOf = (line: string) => line.slice(0, line.indexOf(':')).toLowerCase();
  head.sort((a, b) => (nameOf(a) < nameOf(b) ? -1 : nameOf(a) > nameOf(b) ? 1 : 0));
  return `${[status, ...head].join('\r\n')}\r\n\r\n${text.slice(end + 4)}`;
}

/** Answers sent one after another on a connection, cut apart by their Content-Length (none: no body). */
function splitAnswers(bytes: Buffer): Buffer[] {
  const answers: Buffer[] = [];
  let rest = bytes;
  for (let i = 0; i < 10 && rest.length > 0; i += 1) {
    const end = rest.indexOf('\r\n\r\n') + 4;
    const length = Number(/\r\ncontent-length: (\d+)/i.exec(rest.subarray(0, end).toString('latin1'))?.[1] ?? 0);
    answers.push(rest.subarray(0, end + length));
    rest = rest.subarray(end + length);
  }
  return answers;
}

function listen(listener: RequestListener): Promise<{ server: Server; port: number }> {
  const server = createServer(listener);
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, port: (server.address() as AddressInfo).port })));
}

describe('the Node hot path for fresh cached reads', () => {
  const recorder = createMetricsRecorder();
  // ACCESS_LOG=all: a line for every request on both paths, so their lines can be compared.
  const service = createTestApp({
    env: { ALLOWED_ORIGINS: ALLOWED, ACCESS_LOG: 'all' },
    metrics: recorder.metrics,
    encodeBody: createNodeBodyEncoder(),
  });
  const hotPath = createNodeHotPath(service.served);
  // The app's own fetch, as the Node entry serves it (the tests' response observer rebuilds answers).
  const general = getRequestListener(service.served.fetch);
  let generalOnly: { server: Server; port: number };
  let withHotPath: { server: Server; port: number };
  let etag = '';

  beforeAll(async () => {
    generalOnly = await listen(general);
    withHotPath = await listen(hotPath.inFrontOf(general));
    const answer = (await rawRequest(generalOnly.port, { name: 'etag', target: `/api/issues/${KNOWN_SLUG}`, hot: false })).toString();
    etag = /\r\nETag: ("[^"]+")/i.exec(answer)?.[1] ?? '';
  });
  afterAll(async () => {
    await Promise.all([generalOnly, withHotPath].map(({ server }) => new Promise((resolve) => server.close(resolve))));
  });

  const slugPath = `/api/issues/${KNOWN_SLUG}`;
  const readPaths = ['/api/issues', slugPath, '/api/categories'];
  const rows: Row[] = [
    ...readPaths.flatMap((target): Row[] => [
      { name: `GET ${target} without Origin`, target, hot: true },
      { name: `GET ${target} from the allowed origin`, target, headers: { Origin: ALLOWED }, hot: true },
      { name: `GET ${target} from a foreign origin`, target, headers: { Origin: 'https://evil.example' }, hot: true },
      { name: `GET ${target} from the service's own origin`, target, headers: { Origin: `http://${HOST}` }, hot: true },
      { name: `HEAD ${target}`, method: 'HEAD', target, hot: false },
      { name: `HEAD ${target} from the allowed origin`, method: 'HEAD', target, headers: { Origin: ALLOWED }, hot: false },
      { name: `GET ${target} with a junk query`, target: `${target}?utm_source=x&a=%ZZ`, hot: true },
      { name: `GET ${target} with a request id to keep`, target, headers: { 'X-Request-Id': 'trace-42' }, hot: true },
      { name: `GET ${target} with a request id to replace`, target, headers: { 'X-Request-Id': 'not safe!' }, hot: true },
    ]),
    { name: 'If-None-Match naming the ETag (304)', target: slugPath, headers: { 'If-None-Match': '<etag>' }, hot: true },
    { name: 'If-None-Match naming the weak ETag (304)', target: slugPath, headers: { 'If-None-Match': 'W/<etag>' }, hot: true },
    { name: 'If-None-Match: * (304)', target: '/api/categories', headers: { 'If-None-Match': '*' }, hot: true },
    { name: 'If-None-Match naming another ETag (200)', target: slugPath, headers: { 'If-None-Match': '"other"' }, hot: true },
    {
      name: 'HEAD with If-None-Match naming the ETag (304)',
      method: 'HEAD',
      target: slugPath,
      headers: { 'If-None-Match': '<etag>' },
      hot: false,
    },
    { name: 'an archive page', target: '/api/issues?limit=5&offset=2', hot: true },
    ...readPaths.flatMap((target): Row[] => [
      { name: `GET ${target} accepting br and gzip`, target, headers: { 'Accept-Encoding': 'gzip, deflate, br' }, hot: true },
      {
        name: `GET ${target} accepting gzip from the allowed origin`,
        target,
        headers: { 'Accept-Encoding': 'gzip', Origin: ALLOWED },
        hot: true,
      },
      { name: `GET ${target} refusing both codings`, target, headers: { 'Accept-Encoding': 'br;q=0, gzip;q=0' }, hot: true },
      { name: `HEAD ${target} accepting br`, method: 'HEAD', target, headers: { 'Accept-Encoding': 'br' }, hot: false },
    ]),
    {
      name: 'If-None-Match naming the br ETag, accepting br (304)',
      target: slugPath,
      headers: { 'If-None-Match': '<etag-br>', 'Accept-Encoding': 'br' },
      hot: true,
    },
    {
      name: 'If-None-Match naming the gzip ETag, accepting gzip (304)',
      target: slugPath,
      headers: { 'If-None-Match': '<etag-gzip>', 'Accept-Encoding': 'gzip' },
      hot: true,
    },
    {
      name: 'If-None-Match naming the identity ETag, accepting br (200 in br)',
      target: slugPath,
      headers: { 'If-None-Match': '<etag>', 'Accept-Encoding': 'br' },
      hot: true,
    },
    {
      name: 'If-None-Match naming the br ETag, accepting gzip only (200 in gzip)',
      target: slugPath,
      headers: { 'If-None-Match': '<etag-br>', 'Accept-Encoding': 'gzip' },
      hot: true,
    },
    { name: 'an archive page of one category', target: '/api/issues?category=interviews&limit=3', hot: true },
    { name: 'an archive query that fails validation', target: '/api/issues?limit=0', hot: false },
    { name: 'a repeated parameter', target: '/api/issues?limit=2&limit=3', hot: true },
    { name: 'a feed by ?format=', target: '/api/issues?format=atom', hot: false },
    { name: 'a feed by Accept', target: '/api/issues', headers: { Accept: 'application/rss+xml' }, hot: false },
    { name: 'an upper-case route', target: '/API/issues', hot: false },
    { name: 'an upper-case segment', target: '/api/Issues', hot: false },
    { name: 'an upper-case slug (unknown)', target: `/api/issues/${KNOWN_SLUG.toUpperCase()}`, hot: false },
    { name: 'a percent-encoded slug', target: `/api/issues/${KNOWN_SLUG.replace('-', '%2D')}`, hot: false },
    { name: 'a percent-encoded route', target: '/api/%69ssues', hot: false },
    { name: 'an encoded slash in the slug', target: '/api/issues/a%2Fb', hot: false },
    { name: 'a dot segment', target: `/api/x/../issues/${KNOWN_SLUG}`, hot: false },
    { name: 'a trailing slash', target: '/api/issues/', hot: false },
    { name: 'an unknown slug', target: '/api/issues/no-such-issue', hot: false },
    { name: 'an unknown path', target: '/api/nothing-here', hot: false },
    { name: 'GET of the subscribe route', target: '/api/subscribe', hot: false },
    { name: 'POST to a read route', method: 'POST', target: '/api/issues', headers: { 'Content-Length': '0' }, hot: false },
    {
      name: 'a preflight',
      method: 'OPTIONS',
      target: '/api/issues',
      headers: { Origin: ALLOWED, 'Access-Control-Request-Method': 'GET' },
      hot: false,
    },
    {
      name: 'an upper-case Host',
      target: '/api/categories',
      headers: { Host: 'BFF.example:8443', Origin: 'http://bff.example:8443' },
      hot: false,
    },
    {
      name: 'a Host with the default port',
      target: '/api/categories',
      headers: { Host: 'bff.example:80', Origin: 'http://bff.example' },
      hot: false,
    },
    { name: 'a GET with a body', target: '/api/categories', headers: { 'Content-Length': '2' }, hot: false },
    { name: 'an HTTP/1.0 request', target: slugPath, version: '1.0', hot: true },
    { name: 'a Host with user info', target: '/api/categories', headers: { Host: 'user@bff.example' }, hot: false },
    { name: 'a Host that is not a canonical IPv4 address', target: '/api/categories', headers: { Host: '1.2.3:8443' }, hot: false },
    { name: 'a Host that is an IPv6 address', target: '/api/categories', headers: { Host: '[::1]:8443' }, hot: true },
  ];

  it.each(rows)('answers $name the same on both paths (hot path: $hot)', async (template) => {
    const withEtag = (value: string) =>
      value
        .replace('<etag-br>', `${etag.slice(0, -1)}-br"`)
        .replace('<etag-gzip>', `${etag.slice(0, -1)}-gzip"`)
        .replace('<etag>', etag);
    const row = { ...template, headers: Object.fromEntries(Object.entries(template.headers ?? {}).map(([n, v]) => [n, withEtag(v)])) };
    await rawRequest(generalOnly.port, row); // warms the cache and the query memo
    const before = hotPath.served();
    const logged = service.logs.lines.length;
    const reported = recorder.events.length;
    const expected = await rawRequest(generalOnly.port, row);
    const counted = recorder.events.length;
    const actual = await rawRequest(withHotPath.port, row);
    expect(hotPath.served() - before).toBe(row.hot ? 1 : 0);
    expect(comparable(actual, row)).toBe(comparable(expected, row));
    // The same access-log line, but for its timing and (generated) request id.
    const [a, b] = service.logs
      .entries()
      .slice(logged)
      .map(({ time, ms, requestId, ...rest }) => rest);
    expect(b).toEqual(a);
    // The same metrics (a request's duration aside), in the same order.
    const untimed = (events: unknown[][]) => events.map((event) => (event[0] === 'request' ? event.slice(0, 4) : event));
    expect(untimed(recorder.events.slice(counted))).toEqual(untimed(recorder.events.slice(reported, counted)));
  });

  it('answers several requests on one kept-alive connection the same on both paths, keep-alive lines included', async () => {
    const sequence: Row[] = [
      { name: 'first', target: '/api/issues', hot: true },
      { name: 'second', target: slugPath, headers: { Origin: ALLOWED }, hot: true },
      { name: 'revalidation', target: slugPath, headers: { 'If-None-Match': etag }, hot: true },
      { name: 'last', target: '/api/categories', hot: true },
    ];
    const heads = sequence.map((row, i) => requestHead(row, i === sequence.length - 1 ? 'close' : 'keep-alive'));
    await rawExchange(generalOnly.port, heads);
    const before = hotPath.served();
    const expected = splitAnswers(await rawExchange(generalOnly.port, heads));
    const actual = splitAnswers(await rawExchange(withHotPath.port, heads));
    expect(hotPath.served() - before).toBe(sequence.length);
    expect(actual).toHaveLength(sequence.length);
    expect(actual.map((answer, i) => comparable(answer, sequence[i]!))).toEqual(
      expected.map((answer, i) => comparable(answer, sequence[i]!)),
    );
    expect(actual[0]!.toString('latin1')).toMatch(/\r\nConnection: keep-alive\r\nKeep-Alive: timeout=\d+\r\n/);
    expect(actual[3]!.toString('latin1')).toMatch(/\r\nConnection: close\r\n/);
  });

  it('gives each answer from one cached copy its own request id, the one its access line names', async () => {
    const row: Row = { name: 'repeated', target: '/api/categories', hot: true };
    await rawRequest(withHotPath.port, row);
    const before = hotPath.served();
    const logged = service.logs.lines.length;
    const heads = Array.from({ length: 6 }, (_, i) => requestHead(row, i === 5 ? 'close' : 'keep-alive'));
    const answers = splitAnswers(await rawExchange(withHotPath.port, heads));
    expect(hotPath.served() - before).toBe(6);
    const sent = answers.map((answer) => /\r\nX-Request-Id: ([0-9a-f]{32})\r\n/.exec(answer.toString('latin1'))?.[1]);
    expect(new Set(sent).size).toBe(6);
    expect(
      service.logs
        .entries()
        .slice(logged)
        .map((entry) => entry.requestId),
    ).toEqual(sent);
  });

  it('answers the allowed origin alike after many made-up origins, which share one header record', async () => {
    const junk: Row[] = Array.from({ length: 20 }, (_, i) => ({
      name: `junk ${i}`,
      target: slugPath,
      headers: { Origin: `https://junk-${i}.example` },
      hot: true,
    }));
    const allowed: Row = { name: 'allowed', target: slugPath, headers: { Origin: ALLOWED }, hot: true };
    await rawRequest(generalOnly.port, allowed);
    const before = hotPath.served();
    for (const row of junk)
      expect(comparable(await rawRequest(withHotPath.port, row), row)).toBe(comparable(await rawRequest(generalOnly.port, row), row));
    expect(comparable(await rawRequest(withHotPath.port, allowed), allowed)).toBe(
      comparable(await rawRequest(generalOnly.port, allowed), allowed),
    );
    expect(hotPath.served() - before).toBe(junk.length + 1);
  });

  it('leaves a stale copy to the general pipeline, which refreshes it', async () => {
    await rawRequest(withHotPath.port, { name: 'warm', target: '/api/categories', hot: true });
    service.clock.advance((service.config.cacheTtlSeconds + 1) * 1000);
    const before = hotPath.served();
    const answer = (await rawRequest(withHotPath.port, { name: 'stale', target: '/api/categories', hot: false })).toString();
    expect(answer).toMatch(/\r\nX-Cache: STALE\r\n/i);
    expect(hotPath.served()).toBe(before);
  });
});

describe('the Node hot path with ACCESS_LOG=summary (the default)', () => {
  const slugPath = `/api/issues/${KNOWN_SLUG}`;

  async function served(service: ReturnType<typeof createTestApp>, rows: Row[]) {
    const hotPath = createNodeHotPath(service.served);
    const withHotPath = await listen(hotPath.inFrontOf(getRequestListener(service.served.fetch)));
    try {
      for (const row of rows) await rawRequest(withHotPath.port, row);
    } finally {
      await new Promise((resolve) => withHotPath.server.close(resolve));
    }
    return hotPath.served();
  }

  it('writes no line for a fresh hit, counts it, and writes one cache_hits line per route and status when asked', async () => {
    const service = createTestApp();
    expect(service.config.accessLog).toBe('summary');
    expect(service.served.logAccess.freshHitsTimed).toBe(false);
    // Warm: the archive's first read is a miss the general pipeline answers and lines.
    await served(service, [
      { name: 'miss', target: '/api/issues', hot: false },
      { name: 'warm', target: slugPath, hot: true },
    ]);
    expect(
      service.logs
        .entries()
        .filter((entry) => entry.event === 'request')
        .map(({ path, cache }) => ({ path, cache })),
    ).toEqual([{ path: '/api/issues', cache: 'MISS' }]);
    const etag = (await service.app.request(slugPath)).headers.get('etag')!;
    service.served.logAccess.writeHitSummary();
    const logged = service.logs.lines.length;
    const hits: Row[] = [
      ...Array.from({ length: 3 }, (): Row => ({ name: 'hit', target: '/api/issues', hot: true })),
      ...Array.from({ length: 2 }, (): Row => ({ name: 'hit', target: slugPath, hot: true })),
      { name: 'revalidation', target: slugPath, headers: { 'If-None-Match': etag }, hot: true },
      { name: 'HEAD', method: 'HEAD', target: slugPath, hot: false },
    ];
    expect(await served(service, hits)).toBe(6);
    // Only the HEAD, which the general pipeline answers, has its own line.
    expect(
      service.logs
        .entries()
        .slice(logged)
        .map(({ event, method, status, cache }) => ({ event, method, status, cache })),
    ).toEqual([{ event: 'request', method: 'HEAD', status: 200, cache: 'HIT' }]);
    service.clock.advance(59_500);
    const before = service.logs.lines.length;
    service.served.logAccess.writeHitSummary();
    // In the order each was first counted (the slug's when warming).
    expect(
      service.logs
        .entries()
        .slice(before)
        .map(({ time, ...rest }) => rest),
    ).toEqual([
      {
        level: 'info',
        event: 'cache_hits',
        method: 'GET',
        route: '/api/issues/:slug',
        status: 200,
        cache: 'HIT',
        requests: 2,
        seconds: 59.5,
      },
      { level: 'info', event: 'cache_hits', method: 'GET', route: '/api/issues', status: 200, cache: 'HIT', requests: 3, seconds: 59.5 },
      {
        level: 'info',
        event: 'cache_hits',
        method: 'GET',
        route: '/api/issues/:slug',
        status: 304,
        cache: 'HIT',
        requests: 1,
        seconds: 59.5,
      },
    ]);
    // Counted afresh: a summary with nothing counted writes nothing, the next one only what came since.
    service.served.logAccess.writeHitSummary();
    expect(service.logs.lines.length).toBe(before + 3);
    // Still fresh (the TTL is 60 s): a hit on the fast path.
    expect(await served(service, [{ name: 'hit', target: '/api/issues', hot: true }])).toBe(1);
    service.clock.advance(30_000);
    service.served.logAccess.writeHitSummary();
    expect(
      service.logs
        .entries()
        .slice(before + 3)
        .map(({ route, status, requests, seconds }) => ({ route, status, requests, seconds })),
    ).toEqual([{ route: '/api/issues', status: 200, requests: 1, seconds: 30 }]);
  });

  it('still times and counts every fresh hit in the request metric', async () => {
    const recorder = createMetricsRecorder();
    const service = createTestApp({ metrics: recorder.metrics });
    expect(service.served.logAccess.freshHitsTimed).toBe(true);
    await served(service, [{ name: 'miss', target: '/api/categories', hot: false }]);
    const counted = recorder.events.length;
    const sentFrom = performance.now();
    expect(
      await served(
        service,
        Array.from({ length: 4 }, (): Row => ({ name: 'hit', target: '/api/categories', hot: true })),
      ),
    ).toBe(4);
    const elapsedSeconds = (performance.now() - sentFrom) / 1000;
    const requests = recorder.events.slice(counted).filter((event) => event[0] === 'request');
    expect(requests.map((event) => event.slice(0, 4))).toEqual(Array.from({ length: 4 }, () => ['request', '/api/categories', 'GET', 200]));
    // Timed from each request's arrival: within the time they were sent in (a missing start
    // time would give the seconds since the clock's origin).
    for (const event of requests) {
      expect(event[4]).toBeGreaterThan(0);
      expect(event[4]).toBeLessThanOrEqual(elapsedSeconds);
    }
  });
});

describe('the Node hot path when every origin is allowed', () => {
  const service = createTestApp({ env: { ALLOWED_ORIGINS: '*' } });
  const hotPath = createNodeHotPath(service.served);
  const general = getRequestListener(service.served.fetch);

  it.each([undefined, 'https://anywhere.example', 'null'])('answers Origin %s the same on both paths', async (origin) => {
    const generalOnly = await listen(general);
    const withHotPath = await listen(hotPath.inFrontOf(general));
    try {
      const row: Row = {
        name: String(origin),
        target: '/api/categories',
        headers: origin === undefined ? {} : { Origin: origin },
        hot: true,
      };
      await rawRequest(generalOnly.port, row);
      const before = hotPath.served();
      const expected = await rawRequest(generalOnly.port, row);
      const actual = await rawRequest(withHotPath.port, row);
      expect(hotPath.served() - before).toBe(1);
      expect(comparable(actual, row)).toBe(comparable(expected, row));
      expect(actual.toString('latin1')).toMatch(/\r\nAccess-Control-Allow-Origin: \*\r\n/);
    } finally {
      await Promise.all([generalOnly, withHotPath].map(({ server }) => new Promise((resolve) => server.close(resolve))));
    }
  });
});
