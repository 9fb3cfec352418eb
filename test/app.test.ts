import { describe, expect, it } from 'vitest';
import { createApp } from '../src/core/app.js';
import { createDemoUpstream } from '../src/demo/upstream.js';
import { createUpstreamClient } from '../src/core/upstream/newsletter-api.js';
import { TEST_API_KEY, createFakeClock, createScriptedFetch, createTestApp, jsonResponse, testConfig } from './helpers.js';

const KNOWN_SLUG = 'meet-the-rooftop-beekeepers-of-eastside';
const GET_ROUTES = ['/api/issues', `/api/issues/${KNOWN_SLUG}`, '/api/categories'];
const ALLOWED_ORIGIN = 'https://site.example';

/** The real app over the demo upstream, with the demo's traffic recorded in a call log. */
function createDemoApp(env: Record<string, string> = {}) {
  const demo = createDemoUpstream({ apiKey: TEST_API_KEY });
  const upstream = createScriptedFetch((call) => demo.fetch(call.url, { method: call.method, headers: call.headers }));
  const test = createTestApp({ fetch: upstream.fetch, env: { NEWSLETTER_API_BASE_URL: demo.baseUrl, ...env } });
  return { ...test, calls: upstream.calls };
}

async function expectJsonError(res: Response, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  expect(res.headers.get('cache-control')).toBe('no-store');
  expect(await res.json()).toEqual({ ok: false, error: { code, message: expect.any(String) } });
}

describe('HEAD on the GET routes', () => {
  it.each(GET_ROUTES)('answers HEAD %s with 200, the GET headers and an empty body', async (path) => {
    const { app } = createDemoApp();
    const get = await app.request(path);
    const head = await app.request(path, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-type')).toMatch(/^application\/json/);
    expect(head.headers.get('cache-control')).toBe(get.headers.get('cache-control'));
    expect(head.headers.get('etag')).toBe(get.headers.get('etag'));
    expect(head.headers.get('x-request-id')).toBeTruthy();
    expect(await head.text()).toBe('');
  });
});

describe('methods the GET routes do not answer', () => {
  const cases = GET_ROUTES.flatMap((path) => ['POST', 'PUT', 'DELETE', 'PATCH'].map((method) => [method, path] as const));

  it.each(cases)('answers %s %s with 405 METHOD_NOT_ALLOWED, an Allow header and no upstream call', async (method, path) => {
    const { app, calls } = createDemoApp();
    const res = await app.request(path, {
      method,
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ status: 'draft' }),
    });
    const allow = (res.headers.get('allow') ?? '').split(',').map((entry) => entry.trim());
    expect(allow).toEqual(expect.arrayContaining(['GET', 'HEAD', 'OPTIONS']));
    expect(allow).not.toContain(method);
    await expectJsonError(res, 405, 'METHOD_NOT_ALLOWED');
    expect(calls).toHaveLength(0);
  });

  it('answers GET /api/subscribe with 405 and Allow: POST, OPTIONS, reaching no upstream operation', async () => {
    const { app, calls } = createDemoApp();
    const res = await app.request('/api/subscribe');
    const allow = (res.headers.get('allow') ?? '').split(',').map((entry) => entry.trim());
    expect(allow).toEqual(expect.arrayContaining(['POST', 'OPTIONS']));
    expect(allow).not.toContain('GET');
    await expectJsonError(res, 405, 'METHOD_NOT_ALLOWED');
    expect(calls).toHaveLength(0);
  });
});

describe('paths that are not ours', () => {
  const unknownPaths = [
    '/',
    '/api',
    '/api/',
    '/api/subscribers',
    '/api/issues/a/b',
    '/api/categories/community',
    '/api/issues/by-slug/x',
    '/v1/newsletter/settings',
    '/v1/newsletter/issues',
    '/v1/newsletter/subscribers',
    '/newsletter/issues',
    '/api/analytics',
    '/favicon.ico',
  ];

  it.each(unknownPaths)('answers GET %s with a JSON 404 and no upstream call', async (path) => {
    const { app, calls } = createDemoApp();
    const res = await app.request(path);
    await expectJsonError(res, 404, 'NOT_FOUND');
    expect(calls).toHaveLength(0);
  });

  it.each(['POST', 'DELETE'])('answers %s on an unknown path with a JSON 404 and no upstream call', async (method) => {
    const { app, calls } = createDemoApp();
    const res = await app.request('/v1/newsletter/subscribers', {
      method,
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ email: 'a@example.com' }),
    });
    await expectJsonError(res, 404, 'NOT_FOUND');
    expect(calls).toHaveLength(0);
  });
});

describe('CORS', () => {
  it('echoes an allowed origin with Vary: Origin and no credentials grant', async () => {
    const { app } = createDemoApp({ ALLOWED_ORIGINS: ALLOWED_ORIGIN });
    for (const path of GET_ROUTES) {
      const res = await app.request(path, { headers: { Origin: ALLOWED_ORIGIN } });
      expect(res.status).toBe(200);
      expect(res.headers.get('access-control-allow-origin')).toBe(ALLOWED_ORIGIN);
      expect(res.headers.get('vary') ?? '').toMatch(/\bOrigin\b/);
      expect(res.headers.get('access-control-allow-credentials')).toBeNull();
    }
  });

  it('grants nothing to a foreign origin', async () => {
    const { app } = createDemoApp({ ALLOWED_ORIGINS: ALLOWED_ORIGIN });
    for (const path of GET_ROUTES) {
      const res = await app.request(path, { headers: { Origin: 'https://evil.example' } });
      expect(res.headers.get('access-control-allow-origin')).toBeNull();
      expect(res.headers.get('access-control-allow-credentials')).toBeNull();
    }
  });

  it('does not treat a look-alike of the allowed origin as allowed', async () => {
    const { app } = createDemoApp({ ALLOWED_ORIGINS: ALLOWED_ORIGIN });
    for (const origin of ['https://site.example.evil.example', 'http://site.example', 'https://evil-site.example', 'null']) {
      const res = await app.request('/api/issues', { headers: { Origin: origin } });
      expect(res.headers.get('access-control-allow-origin')).toBeNull();
    }
  });

  it.each(GET_ROUTES)(
    'answers a preflight for %s from the allowed origin with 204 and the allowed methods, without an upstream call',
    async (path) => {
      const { app, calls } = createDemoApp({ ALLOWED_ORIGINS: ALLOWED_ORIGIN });
      const res = await app.request(path, {
        method: 'OPTIONS',
        headers: { Origin: ALLOWED_ORIGIN, 'Access-Control-Request-Method': 'GET', 'Access-Control-Request-Headers': 'if-none-match' },
      });
      expect(res.status).toBe(204);
      expect(res.headers.get('access-control-allow-origin')).toBe(ALLOWED_ORIGIN);
      const methods = (res.headers.get('access-control-allow-methods') ?? '').split(',').map((entry) => entry.trim());
      expect(methods).toEqual(expect.arrayContaining(['GET', 'HEAD']));
      expect(res.headers.get('access-control-allow-credentials')).toBeNull();
      expect(await res.text()).toBe('');
      expect(calls).toHaveLength(0);
    },
  );

  it('answers a preflight from a foreign origin without a grant', async () => {
    const { app, calls } = createDemoApp({ ALLOWED_ORIGINS: ALLOWED_ORIGIN });
    const res = await app.request('/api/issues', {
      method: 'OPTIONS',
      headers: { Origin: 'https://evil.example', 'Access-Control-Request-Method': 'GET' },
    });
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
    expect(calls).toHaveLength(0);
  });

  it('answers any origin with * when ALLOWED_ORIGINS is *', async () => {
    const { app } = createDemoApp({ ALLOWED_ORIGINS: '*' });
    for (const path of GET_ROUTES) {
      const res = await app.request(path, { headers: { Origin: 'https://anyone.example' } });
      expect(res.status).toBe(200);
      expect(res.headers.get('access-control-allow-origin')).toBe('*');
      expect(res.headers.get('access-control-allow-credentials')).toBeNull();
    }
  });
});

describe('headers on every response', () => {
  /** One of each kind of answer: success, 304, HEAD, preflight, 404, 405, 422, upstream failure. */
  async function requestOneOfEach() {
    const { app } = createDemoApp({ ALLOWED_ORIGINS: ALLOWED_ORIGIN });
    const etag = (await app.request('/api/issues')).headers.get('etag') ?? '';
    const requests: [path: string, init?: RequestInit][] = [
      ['/api/issues'],
      ['/api/issues', { headers: { 'If-None-Match': etag } }],
      [`/api/issues/${KNOWN_SLUG}`],
      ['/api/categories', { method: 'HEAD' }],
      ['/api/issues', { method: 'OPTIONS', headers: { Origin: ALLOWED_ORIGIN, 'Access-Control-Request-Method': 'GET' } }],
      ['/api/issues/no-such-issue'],
      ['/nowhere'],
      ['/api/issues', { method: 'DELETE' }],
      ['/api/issues?limit=0'],
      ['/api/issues/a.b'],
    ];
    const responses: Response[] = [];
    for (const [path, init] of requests) responses.push(await app.request(path, init));
    return { responses };
  }

  it('gives every response its own X-Request-Id', async () => {
    const { responses } = await requestOneOfEach();
    expect(responses.map((res) => res.status)).toEqual([200, 304, 200, 200, 204, 404, 404, 405, 422, 422]);
    const ids = responses.map((res) => res.headers.get('x-request-id'));
    for (const id of ids) expect(id).toMatch(/^[\w=-]{8,}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('sends X-Content-Type-Options: nosniff on every response', async () => {
    const { responses } = await requestOneOfEach();
    for (const res of responses) expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it('sends X-Request-Id and nosniff on an upstream failure too', async () => {
    const upstream = createScriptedFetch(() => jsonResponse({ ok: false, error: { code: 'X', message: 'x' } }, 500));
    const { app } = createTestApp({ fetch: upstream.fetch });
    const res = await app.request('/api/categories');
    expect(res.status).toBe(502);
    expect(res.headers.get('x-request-id')).toBeTruthy();
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  });
});

/** The security headers of a JSON API response, as the service promises them. */
const API_SECURITY_HEADERS = {
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
  'strict-transport-security': 'max-age=15552000; includeSubDomains',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
};

function securityHeadersOf(res: Response) {
  return Object.fromEntries(Object.keys(API_SECURITY_HEADERS).map((name) => [name, res.headers.get(name)]));
}

describe('security and CORS headers, cached hits and errors alike', () => {
  it('sends the same security headers on a cached hit, a 304, a preflight and every kind of error', async () => {
    const { app } = createDemoApp({ ALLOWED_ORIGINS: ALLOWED_ORIGIN });
    const miss = await app.request('/api/issues');
    const etag = miss.headers.get('etag')!;
    const responses = [
      miss,
      await app.request('/api/issues'),
      await app.request('/api/issues', { headers: { 'If-None-Match': etag } }),
      await app.request(`/api/issues/${KNOWN_SLUG}`, { method: 'HEAD' }),
      await app.request('/api/issues', { method: 'OPTIONS', headers: { Origin: ALLOWED_ORIGIN, 'Access-Control-Request-Method': 'GET' } }),
      await app.request('/api/issues/no-such-issue'),
      await app.request('/api/issues?limit=0'),
      await app.request('/api/categories', { method: 'PUT' }),
      await app.request('/nowhere'),
    ];
    expect(responses[1]!.headers.get('x-cache')).toBe('HIT');
    for (const res of responses) {
      expect(securityHeadersOf(res)).toEqual(API_SECURITY_HEADERS);
      // Headers only a rendered document acts on are the site pages' (OWASP's REST set has none of them).
      for (const name of ['referrer-policy', 'cross-origin-resource-policy', 'cross-origin-opener-policy'])
        expect(res.headers.get(name)).toBeNull();
    }
  });

  it('sends Vary: Origin on API answers when only some origins are allowed (with Accept on the negotiated archive), and once on a preflight', async () => {
    const { app } = createDemoApp({ ALLOWED_ORIGINS: ALLOWED_ORIGIN });
    for (const path of [...GET_ROUTES, '/api/issues/no-such-issue']) {
      const variants: Record<string, string>[] = [{}, { Origin: ALLOWED_ORIGIN }, { Origin: 'https://evil.example' }];
      for (const headers of variants) {
        const vary = new URL(path, 'http://bff.test').pathname === '/api/issues' ? 'Origin, Accept' : 'Origin';
        expect((await app.request(path, { headers })).headers.get('vary')).toBe(vary);
      }
    }
    const preflight = await app.request('/api/issues', {
      method: 'OPTIONS',
      headers: { Origin: ALLOWED_ORIGIN, 'Access-Control-Request-Method': 'GET' },
    });
    const vary = (preflight.headers.get('vary') ?? '').split(',').map((entry) => entry.trim());
    expect(vary.filter((entry) => entry === 'Origin')).toHaveLength(1);
  });

  it('exposes the caching headers to an allowed origin on a cached hit and on an error', async () => {
    const { app } = createDemoApp({ ALLOWED_ORIGINS: ALLOWED_ORIGIN });
    await app.request('/api/categories');
    for (const path of ['/api/categories', '/api/issues/no-such-issue']) {
      const res = await app.request(path, { headers: { Origin: ALLOWED_ORIGIN } });
      expect(res.headers.get('access-control-allow-origin')).toBe(ALLOWED_ORIGIN);
      expect((res.headers.get('access-control-expose-headers') ?? '').split(',')).toEqual(
        expect.arrayContaining(['ETag', 'Retry-After', 'X-Cache', 'X-Request-Id']),
      );
    }
  });

  it('keeps a safe incoming X-Request-Id and replaces an unsafe one', async () => {
    const { app } = createDemoApp();
    const kept = await app.request('/api/categories', { headers: { 'X-Request-Id': 'edge-4f2a_b=' } });
    expect(kept.headers.get('x-request-id')).toBe('edge-4f2a_b=');
    const replaced = await app.request('/api/categories', { headers: { 'X-Request-Id': 'a b"<script>' } });
    expect(replaced.headers.get('x-request-id')).toMatch(/^[0-9a-f]{32}$/);
  });

  it('makes new request ids of 32 hex digits, unique from request to request', async () => {
    const { app } = createDemoApp();
    const ids = await Promise.all(
      Array.from({ length: 300 }, async () => (await app.request('/api/categories')).headers.get('x-request-id')),
    );
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{32}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('gives each cached hit and each 304 made from a kept header record its own id, not that of the first answer', async () => {
    const { app } = createDemoApp({ ALLOWED_ORIGINS: ALLOWED_ORIGIN });
    const slug = ((await (await app.request('/api/issues')).json()) as { data: { slug: string }[] }).data[0]!.slug;
    const ids: (string | null)[] = [];
    for (const path of ['/api/issues', `/api/issues/${slug}`, '/api/categories'])
      for (const origin of [{}, { Origin: ALLOWED_ORIGIN }] as Record<string, string>[]) {
        // The first answer of each kind carries a client's id, which its kept record must not pass on.
        const first = await app.request(path, { headers: { ...origin, 'X-Request-Id': 'edge-first' } });
        expect(first.headers.get('x-request-id')).toBe('edge-first');
        const etag = first.headers.get('etag')!;
        for (let round = 0; round < 3; round += 1) {
          const hit = await app.request(path, { headers: origin });
          const notModified = await app.request(path, { headers: { ...origin, 'If-None-Match': etag } });
          expect([hit.status, hit.headers.get('x-cache'), notModified.status]).toEqual([200, 'HIT', 304]);
          ids.push(hit.headers.get('x-request-id'), notModified.headers.get('x-request-id'));
        }
      }
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{32}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('gives the demo site its own page policy and the API the JSON one', async () => {
    const config = testConfig({ NEWSLETTER_API_KEY: '', NEWSLETTER_API_BASE_URL: '' });
    const demo = createDemoUpstream({ apiKey: TEST_API_KEY });
    const upstream = createUpstreamClient({ baseUrl: demo.baseUrl, apiKey: TEST_API_KEY, timeoutMs: 1000, fetch: demo.fetch });
    const { app } = createApp({ config, upstream, site: async (c) => c.html('<p>The Field Notes</p>') });

    const page = await app.request('/');
    expect(page.status).toBe(200);
    const pagePolicy = page.headers.get('content-security-policy') ?? '';
    expect(pagePolicy).toContain("script-src 'self'");
    expect(pagePolicy).toContain("frame-ancestors 'none'");
    expect(page.headers.get('referrer-policy')).toBe('strict-origin-when-cross-origin');
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    expect(page.headers.get('x-request-id')).toBeTruthy();
    // Headers that only documents act on go with pages, not with JSON.
    expect(page.headers.get('cross-origin-opener-policy')).toBe('same-origin');
    expect(page.headers.get('cross-origin-resource-policy')).toBe('same-origin');
    // …except the thumbnails, which a site on another origin (built from the demo) shows.
    const thumbnail = await app.request('/thumbnails/a.svg');
    expect(thumbnail.headers.get('cross-origin-resource-policy')).toBe('cross-origin');
    expect(thumbnail.headers.get('content-security-policy')).toBe(pagePolicy);

    const api = await app.request('/api/categories');
    expect(securityHeadersOf(api)).toEqual(API_SECURITY_HEADERS);
    expect(api.headers.get('cross-origin-opener-policy')).toBeNull();
  });
});

describe('one pipeline', () => {
  /** The app itself, as an entry serves it (createTestApp's records each answer for the contract tests, as a promise). */
  function createPlainApp() {
    const clock = createFakeClock();
    const demo = createDemoUpstream({ apiKey: TEST_API_KEY, now: clock.now });
    const config = testConfig({ NEWSLETTER_API_BASE_URL: demo.baseUrl });
    const upstream = createUpstreamClient({
      baseUrl: demo.baseUrl,
      apiKey: TEST_API_KEY,
      timeoutMs: 1000,
      fetch: demo.fetch,
      now: clock.now,
    });
    return { ...createApp({ config, upstream, now: clock.now }), clock, config };
  }

  it.each([
    '/api/issues',
    '/api/issues?limit=5&category=interviews',
    '/api/issues/meet-the-rooftop-beekeepers-of-eastside',
    '/api/categories',
  ])('answers a fresh cached read of %s at once: the app hands back the response itself, not a promise', async (path) => {
    const { app } = createPlainApp();
    const url = `http://bff.test${path}`;
    const miss = await app.fetch(new Request(url));
    expect(miss.headers.get('x-cache')).toMatch(/MISS|HIT/);
    const hit = app.fetch(new Request(url));
    expect(hit).toBeInstanceOf(Response);
    expect((hit as Response).headers.get('x-cache')).toBe('HIT');
    expect((hit as Response).headers.get('x-request-id')).toMatch(/^[0-9a-f]{32}$/);
  });

  it('answers a stale read as a promise, with the same headers', async () => {
    const { app, clock, config } = createPlainApp();
    await app.request('/api/categories');
    clock.advance((config.cacheTtlSeconds + 1) * 1000);
    const stale = app.fetch(new Request('http://bff.test/api/categories'));
    expect(stale).toBeInstanceOf(Promise);
    const answer = await stale;
    expect(answer.headers.get('x-cache')).toBe('STALE');
    expect(answer.headers.get('x-content-type-options')).toBe('nosniff');
  });
});

describe('caching headers of public GETs', () => {
  it.each(GET_ROUTES)('sends Cache-Control with max-age=60, stale-while-revalidate and stale-if-error for %s', async (path) => {
    const { app } = createDemoApp();
    const res = await app.request(path);
    expect(res.status).toBe(200);
    const cacheControl = res.headers.get('cache-control') ?? '';
    expect(cacheControl).toMatch(/\bpublic\b/);
    expect(cacheControl).toMatch(/\bmax-age=60\b/);
    expect(cacheControl).toMatch(/\bstale-while-revalidate=[1-9]\d*\b/);
    expect(cacheControl).toMatch(/\bstale-if-error=[1-9]\d*\b/);
    expect(cacheControl).not.toMatch(/no-store|private/);
  });

  it('takes max-age from CACHE_TTL_SECONDS', async () => {
    const { app } = createDemoApp({ CACHE_TTL_SECONDS: '120' });
    expect((await app.request('/api/issues')).headers.get('cache-control')).toMatch(/\bmax-age=120\b/);
  });

  it.each(GET_ROUTES)('sends a strong ETag for %s and answers If-None-Match with that ETag by 304 without a body', async (path) => {
    const { app } = createDemoApp();
    const first = await app.request(path);
    const etag = first.headers.get('etag');
    expect(etag).toMatch(/^"[^"]+"$/);

    const revalidated = await app.request(path, { headers: { 'If-None-Match': etag! } });
    expect(revalidated.status).toBe(304);
    expect(revalidated.headers.get('etag')).toBe(etag);
    expect(await revalidated.text()).toBe('');

    const other = await app.request(path, { headers: { 'If-None-Match': '"something-else"' } });
    expect(other.status).toBe(200);
    expect(await other.text()).toBe(await first.text());
  });

  it('gives different pages different ETags', async () => {
    const { app } = createDemoApp();
    const first = await app.request('/api/issues?limit=5');
    const second = await app.request('/api/issues?limit=5&offset=5');
    expect(first.headers.get('etag')).not.toBe(second.headers.get('etag'));
    expect((await app.request('/api/issues?limit=5&offset=5', { headers: { 'If-None-Match': first.headers.get('etag')! } })).status).toBe(
      200,
    );
  });
});

describe('access log and the API key', () => {
  it('writes one request line per request with method, path, status, ms and the request id', async () => {
    const { app, logs } = createDemoApp();
    const requests: [string, RequestInit | undefined][] = [
      ['/api/issues', undefined],
      ['/api/categories', { method: 'HEAD' }],
      ['/api/issues/a.b', undefined],
      ['/api/issues', { method: 'PUT' }],
      ['/nowhere', undefined],
    ];
    const responses: Response[] = [];
    for (const [path, init] of requests) responses.push(await app.request(path, init));

    const lines = logs.entries().filter((entry) => entry.event === 'request');
    expect(lines).toHaveLength(requests.length);
    lines.forEach((line, index) => {
      const [path, init] = requests[index]!;
      expect(line).toMatchObject({
        method: init?.method ?? 'GET',
        path,
        status: responses[index]!.status,
        requestId: responses[index]!.headers.get('x-request-id'),
      });
      expect(typeof line.ms).toBe('number');
      expect(line.ms as number).toBeGreaterThanOrEqual(0);
    });
  });

  it('masks an address sent as a slug in the logged path', async () => {
    const { app, logs } = createDemoApp();
    expect((await app.request('/api/issues/jane.doe@example.com')).status).toBe(422);
    expect((await app.request('/api/issues/jane.doe%40example.com')).status).toBe(422);
    const lines = logs.entries().filter((entry) => entry.event === 'request');
    expect(lines.map((line) => line.path)).toEqual(['/api/issues/j***@example.com', '/api/issues/j***@example.com']);
    expect(JSON.stringify(logs.entries())).not.toContain('jane.doe');
  });

  it('logs how each cached read was answered, with ACCESS_LOG=all', async () => {
    const { app, logs } = createDemoApp({ ACCESS_LOG: 'all' });
    await app.request('/api/categories');
    await app.request('/api/categories');
    await app.request('/api/issues/a.b');
    const lines = logs.entries().filter((entry) => entry.event === 'request');
    expect(lines.map((line) => line.cache)).toEqual(['MISS', 'HIT', undefined]);
  });

  it('never puts the API key in a response or a log line, even when the upstream echoes it', async () => {
    const upstream = createScriptedFetch((call) => {
      const authorization = call.headers.get('authorization') ?? '';
      const echo = { 'X-Echo-Authorization': authorization, 'Set-Cookie': `k=${authorization}` };
      const path = call.url.pathname;
      if (path === '/v1/newsletter/issues') {
        return jsonResponse(
          {
            ok: true,
            data: [
              {
                id: 'i1',
                slug: 'one',
                subject: 'One',
                status: 'sent',
                isPublic: true,
                sentAt: '2026-01-01T00:00:00.000Z',
                internalNote: authorization,
              },
            ],
          },
          200,
          echo,
        );
      }
      if (path === '/v1/newsletter/categories') {
        return jsonResponse({ ok: false, error: { code: 'RATE_LIMITED', message: `slow down, ${authorization}` } }, 429, echo);
      }
      if (path.endsWith('/unauthorized')) {
        return jsonResponse({ ok: false, error: { code: 'UNAUTHORIZED', message: `rejected ${authorization}` } }, 401, echo);
      }
      if (path.endsWith('/broken')) {
        return new Response(`<html>stack trace with ${authorization}</html>`, { status: 500, headers: echo });
      }
      return jsonResponse({ ok: false, error: { code: 'NOT_FOUND', message: `no issue for ${authorization}` } }, 404, echo);
    });
    // A line for every request, fresh hits included, so that every one can be checked.
    const { app, logs } = createTestApp({ fetch: upstream.fetch, env: { ACCESS_LOG: 'all' } });
    const requests: [string, RequestInit | undefined][] = [
      ['/api/issues', undefined],
      ['/api/issues', { method: 'HEAD' }],
      ['/api/issues/one', undefined],
      ['/api/issues/unauthorized', undefined],
      ['/api/issues/broken', undefined],
      ['/api/issues/missing', undefined],
      ['/api/categories', undefined],
      ['/api/issues?limit=abc', undefined],
      ['/api/issues/..%2Fsubscribers', undefined],
      ['/api/issues', { method: 'POST' }],
      ['/api/issues', { method: 'OPTIONS', headers: { Origin: ALLOWED_ORIGIN, 'Access-Control-Request-Method': 'GET' } }],
      ['/v1/newsletter/settings', undefined],
    ];
    for (const [path, init] of requests) {
      const res = await app.request(path, init);
      expect(await res.text()).not.toContain(TEST_API_KEY);
      for (const [name, value] of res.headers) {
        expect(`${name}: ${value}`).not.toContain(TEST_API_KEY);
      }
      expect(res.headers.get('x-echo-authorization')).toBeNull();
    }
    expect(upstream.calls.length).toBeGreaterThan(0);
    expect(upstream.calls.every((call) => call.headers.get('authorization') === `Bearer ${TEST_API_KEY}`)).toBe(true);
    expect(logs.lines.filter((line) => line.includes('"event":"request"'))).toHaveLength(requests.length);
    for (const line of logs.lines) expect(line).not.toContain(TEST_API_KEY);
  });
});
