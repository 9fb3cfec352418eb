import { describe, expect, it } from 'vitest';
import { createTestApp } from './helpers.js';
import { createMetricsRecorder } from './metrics-recorder.js';

const SLUG = 'meet-the-rooftop-beekeepers-of-eastside';
const SLUG_PATH = `/api/issues/${SLUG}`;

/** The `request` lines written since `from`, as the fields a test compares. */
function requestLines(service: ReturnType<typeof createTestApp>, from = 0) {
  return service.logs
    .entries()
    .slice(from)
    .filter((entry) => entry.event === 'request')
    .map(({ method, path, status, cache }) => ({ method, path, status, cache }));
}

describe('the access log with ACCESS_LOG=summary (the default)', () => {
  it('writes no line for a fresh hit, counts it, and writes one cache_hits line per route and status when asked', async () => {
    const service = createTestApp();
    expect(service.config.accessLog).toBe('summary');
    // The archive's first read is a miss, which has its line; the slug is then read from the index's letters.
    expect((await service.app.request('/api/issues')).headers.get('x-cache')).toBe('MISS');
    const etag = (await service.app.request(SLUG_PATH)).headers.get('etag')!;
    expect(requestLines(service)).toEqual([{ method: 'GET', path: '/api/issues', status: 200, cache: 'MISS' }]);
    service.logAccess.writeHitSummary();
    const logged = service.logs.lines.length;

    for (let i = 0; i < 3; i += 1) expect((await service.app.request('/api/issues')).headers.get('x-cache')).toBe('HIT');
    for (let i = 0; i < 2; i += 1) expect((await service.app.request(SLUG_PATH)).status).toBe(200);
    expect((await service.app.request(SLUG_PATH, { headers: { 'If-None-Match': etag } })).status).toBe(304);
    // Not fresh hits, so each has its line: an unknown slug and a query that fails validation.
    expect((await service.app.request('/api/issues/no-such-issue')).status).toBe(404);
    expect((await service.app.request('/api/issues?limit=0')).status).toBe(422);
    expect(
      service.logs
        .entries()
        .slice(logged)
        .map(({ event, path, status }) => ({ event, path, status })),
    ).toEqual([
      { event: 'request', path: '/api/issues/no-such-issue', status: 404 },
      { event: 'request', path: '/api/issues', status: 422 },
    ]);

    service.clock.advance(59_500);
    const before = service.logs.lines.length;
    service.logAccess.writeHitSummary();
    // In the order each was first counted (the slug's when it was first read).
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
    service.logAccess.writeHitSummary();
    expect(service.logs.lines.length).toBe(before + 3);
    expect((await service.app.request('/api/categories')).headers.get('x-cache')).toBe('MISS');
    expect((await service.app.request('/api/issues')).headers.get('x-cache')).toBe('HIT');
    service.clock.advance(30_000);
    service.logAccess.writeHitSummary();
    expect(
      service.logs
        .entries()
        .slice(before + 3)
        .map(({ event, route, path, status, requests, seconds }) => ({ event, route, path, status, requests, seconds })),
    ).toEqual([
      { event: 'request', route: undefined, path: '/api/categories', status: 200, requests: undefined, seconds: undefined },
      { event: 'cache_hits', route: '/api/issues', path: undefined, status: 200, requests: 1, seconds: 30 },
    ]);
  });

  it('writes a line for a stale answer, and counts a HEAD of a fresh copy apart from the GETs', async () => {
    const service = createTestApp();
    await service.app.request('/api/categories');
    expect((await service.app.request('/api/categories', { method: 'HEAD' })).status).toBe(200);
    service.clock.advance((service.config.cacheTtlSeconds + 1) * 1000);
    const logged = service.logs.lines.length;
    expect((await service.app.request('/api/categories')).headers.get('x-cache')).toBe('STALE');
    expect(requestLines(service, logged)).toEqual([{ method: 'GET', path: '/api/categories', status: 200, cache: 'STALE' }]);
    service.logAccess.writeHitSummary();
    expect(
      service.logs
        .entries()
        .filter((entry) => entry.event === 'cache_hits')
        .map(({ method, route, requests }) => ({ method, route, requests })),
    ).toEqual([{ method: 'HEAD', route: '/api/categories', requests: 1 }]);
  });

  it('still times and counts every fresh hit in the request metric', async () => {
    const recorder = createMetricsRecorder();
    const service = createTestApp({ metrics: recorder.metrics });
    await service.app.request('/api/categories');
    const counted = recorder.events.length;
    const sentFrom = performance.now();
    for (let i = 0; i < 4; i += 1) expect((await service.app.request('/api/categories')).headers.get('x-cache')).toBe('HIT');
    const elapsedSeconds = (performance.now() - sentFrom) / 1000;
    const requests = recorder.events.slice(counted).filter((event) => event[0] === 'request');
    expect(requests.map((event) => event.slice(0, 4))).toEqual(Array.from({ length: 4 }, () => ['request', '/api/categories', 'GET', 200]));
    // Timed from each request's arrival: within the time they were sent in (a missing start
    // time would give the seconds since the clock's origin). Workers' clock stands still while code runs.
    for (const event of requests) {
      expect(event[4]).toBeGreaterThanOrEqual(0);
      expect(event[4]).toBeLessThanOrEqual(elapsedSeconds);
    }
    expect(requestLines(service, 0).map((line) => line.cache)).toEqual(['MISS']);
  });
});

describe('the access log with ACCESS_LOG=all', () => {
  it('gives each line the request id its answer carries: hits, misses, feeds, errors and unrouted requests alike', async () => {
    const service = createTestApp({ env: { ACCESS_LOG: 'all', SITE_ISSUE_URL: 'https://site.example/issues/{slug}' } });
    const requests: [string, RequestInit?][] = [
      ['/api/issues'],
      ['/api/issues'],
      ['/api/issues?format=atom'],
      ['/api/issues?format=rss'],
      [SLUG_PATH],
      ['/api/issues/no-such-issue'],
      ['/api/issues?limit=0'],
      ['/api/nothing-here'],
      ['/api/issues', { method: 'POST' }],
      ['/api/categories', { method: 'HEAD' }],
    ];
    for (const [path, init] of requests) {
      const logged = service.logs.lines.length;
      const answer = await service.app.request(path, init);
      const lines = service.logs
        .entries()
        .slice(logged)
        .filter((entry) => entry.event === 'request');
      expect(lines.map((line) => [line.path, line.status, line.requestId])).toEqual([
        [new URL(path, 'http://x').pathname, answer.status, answer.headers.get('x-request-id')],
      ]);
    }
  });

  it('writes a line for every request, fresh hits included, and no summary', async () => {
    const service = createTestApp({ env: { ACCESS_LOG: 'all' } });
    for (let i = 0; i < 3; i += 1) await service.app.request('/api/categories');
    expect(requestLines(service).map((line) => line.cache)).toEqual(['MISS', 'HIT', 'HIT']);
    service.logAccess.writeHitSummary();
    expect(service.logs.entries().filter((entry) => entry.event === 'cache_hits')).toEqual([]);
  });
});
