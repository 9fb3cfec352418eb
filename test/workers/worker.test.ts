import { createExecutionContext, env as poolEnv, waitOnExecutionContext } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { createWorkersSharedCache } from '../../src/core/reads/shared-tier.js';
import { createWorker } from '../../src/workers/handler.js';
import { createFakeClock, createScriptedFetch, jsonResponse, TEST_API_KEY, type FetchHandler } from '../helpers.js';

const ISSUES = [
  { id: 'i1', slug: 'first-issue', subject: 'First', status: 'sent', isPublic: true, sentAt: '2026-01-02T00:00:00.000Z' },
  { id: 'i2', slug: 'second-issue', subject: 'Second', status: 'sent', isPublic: true, sentAt: '2026-01-09T00:00:00.000Z' },
];

/** A fake upstream for the Worker's own fetch, answering the three read operations. */
function upstreamHandler(subject = 'First'): FetchHandler {
  return (call) => {
    if (call.url.pathname.endsWith('/newsletter/issues')) return jsonResponse({ ok: true, data: ISSUES });
    if (call.url.pathname.endsWith('/newsletter/categories')) return jsonResponse({ ok: true, data: [] });
    if (call.url.pathname.endsWith('/newsletter/subscribers')) return jsonResponse({ ok: true, data: {} });
    return jsonResponse({ ok: true, data: { ...ISSUES[0], subject } });
  };
}

/** A second calling key, for a second deployment on the same zone. */
const OTHER_API_KEY = 'other-key-2b8d4e6f-not-real';

/** The Cache API store, recording every URL it is asked for or given. */
function createRecordingCache(store: Cache, urls: string[]): Cache {
  const urlOf = (request: RequestInfo | URL) => (request instanceof Request ? request.url : String(request));
  return {
    match: (request: RequestInfo | URL, options?: CacheQueryOptions) => {
      urls.push(urlOf(request));
      return store.match(request, options);
    },
    put: (request: RequestInfo | URL, response: Response) => {
      urls.push(urlOf(request));
      return store.put(request, response);
    },
    delete: (request: RequestInfo | URL, options?: CacheQueryOptions) => store.delete(request, options),
  } as Cache;
}

let namespaceCounter = 0;

/** Worker bindings: plain vars plus the key as a secret, each test on its own upstream host. */
function bindings(extra: Record<string, unknown> = {}) {
  namespaceCounter += 1;
  return {
    NEWSLETTER_API_KEY: TEST_API_KEY,
    NEWSLETTER_API_BASE_URL: `https://upstream-${namespaceCounter}.test/v1`,
    NODE_ENV: 'production',
    ...extra,
  };
}

async function call(worker: ReturnType<typeof createWorker>, env: Record<string, unknown>, path: string, init?: RequestInit) {
  const ctx = createExecutionContext();
  const response = await worker.fetch(new Request(`https://bff.example${path}`, init), env, ctx);
  await waitOnExecutionContext(ctx);
  return response;
}

describe('Worker entry (workerd)', () => {
  it('reads its config from env bindings and sends the secret only as the Bearer token', async () => {
    const upstream = createScriptedFetch(upstreamHandler());
    const lines: string[] = [];
    const worker = createWorker({ fetch: upstream.fetch, write: (line) => lines.push(line), sharedCache: null });
    const response = await call(worker, bindings({ CACHE_TTL_SECONDS: '42' }), '/api/issues');
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toContain('max-age=42');
    const body = (await response.json()) as { data: { slug: string }[] };
    expect(body.data.map((issue) => issue.slug)).toEqual(['second-issue', 'first-issue']);
    expect(upstream.calls[0]?.headers.get('authorization')).toBe(`Bearer ${TEST_API_KEY}`);
    expect(lines.join('\n')).not.toContain(TEST_API_KEY);
  });

  it('answers a generic 500 when misconfigured and logs each problem once, never the key', async () => {
    const upstream = createScriptedFetch(upstreamHandler());
    const lines: string[] = [];
    const worker = createWorker({ fetch: upstream.fetch, write: (line) => lines.push(line), sharedCache: null });
    const env = bindings({ NEWSLETTER_API_BASE_URL: 'http://not-https.example/v1', CACHE_TTL_SECONDS: 'soon' });
    const requestIds: (string | null)[] = [];
    for (let i = 0; i < 3; i += 1) {
      const response = await call(worker, env, '/api/categories');
      expect(response.status).toBe(500);
      expect(response.headers.get('cache-control')).toBe('no-store');
      expect(response.headers.get('x-content-type-options')).toBe('nosniff');
      expect(response.headers.get('content-security-policy')).toBe("default-src 'none'; frame-ancestors 'none'");
      expect(response.headers.get('x-request-id')).toMatch(/^[0-9a-f]{32}$/);
      requestIds.push(response.headers.get('x-request-id'));
      const text = await response.text();
      expect(JSON.parse(text)).toEqual({
        ok: false,
        error: { code: 'INTERNAL_ERROR', message: 'The service is not configured correctly.' },
      });
      expect(text).not.toContain(TEST_API_KEY);
    }
    const entries = lines.map((line) => JSON.parse(line) as { event: string; problem: string; status?: number; requestId?: string });
    const problems = entries.filter((entry) => entry.event === 'config_error');
    expect(problems).toHaveLength(2);
    // Each visitor's 500 has its access line; its request id is the one the response carried.
    const access = entries.filter((entry) => entry.event === 'request');
    expect(access.map((entry) => entry.status)).toEqual([500, 500, 500]);
    expect(access.map((entry) => entry.requestId)).toEqual(requestIds);
    expect(new Set(requestIds).size).toBe(3);
    expect(problems.map((entry) => entry.problem.split(' ')[0]).sort()).toEqual(['CACHE_TTL_SECONDS', 'NEWSLETTER_API_BASE_URL']);
    expect(lines.join('\n')).not.toContain(TEST_API_KEY);
    expect(upstream.calls).toHaveLength(0);
  });

  it('refuses to serve in production without the secret, and serves the demo when not in production', async () => {
    const production = createWorker({ write: () => undefined, sharedCache: null });
    expect((await call(production, { NODE_ENV: 'production' }, '/api/issues')).status).toBe(500);

    const demo = createWorker({ write: () => undefined, sharedCache: null });
    const response = await call(demo, { NODE_ENV: 'development' }, '/api/issues?limit=1');
    expect(response.status).toBe(200);
    expect(((await response.json()) as { meta: { total: number } }).meta.total).toBeGreaterThanOrEqual(40);
  });

  it('limits subscribe attempts per CF-Connecting-IP and ignores X-Forwarded-For', async () => {
    const upstream = createScriptedFetch(upstreamHandler());
    const worker = createWorker({ fetch: upstream.fetch, write: () => undefined, sharedCache: null });
    const env = bindings({ SUBSCRIBE_RATE_LIMIT_PER_MINUTE: '2' });
    const post = (ip: string, n: number, spoof = '') =>
      call(worker, env, '/api/subscribe', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'CF-Connecting-IP': ip, 'X-Forwarded-For': spoof || `10.0.0.${n}` },
        body: JSON.stringify({ email: `reader${n}@example.com`, optInAttestation: true }),
      });
    expect((await post('198.51.100.1', 1)).status).toBe(200);
    expect((await post('198.51.100.1', 2)).status).toBe(200);
    const limited = await post('198.51.100.1', 3);
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('60');
    expect((await post('198.51.100.2', 4, '198.51.100.1')).status).toBe(200);
    expect(upstream.calls.filter((entry) => entry.method === 'POST')).toHaveLength(3);
  });

  it('keeps the in-memory limit when SUBSCRIBE_RATE_LIMITER is a function rather than a binding object', async () => {
    const upstream = createScriptedFetch(upstreamHandler());
    const worker = createWorker({ fetch: upstream.fetch, write: () => undefined, sharedCache: null });
    const refuseAll = Object.assign(() => undefined, { limit: async () => ({ success: false }) });
    const env = bindings({ SUBSCRIBE_RATE_LIMIT_PER_MINUTE: '2', SUBSCRIBE_RATE_LIMITER: refuseAll });
    const statuses: number[] = [];
    for (let n = 0; n < 3; n += 1) {
      const response = await call(worker, env, '/api/subscribe', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'CF-Connecting-IP': '203.0.113.98' },
        body: JSON.stringify({ email: `unbound${n}@example.com`, optInAttestation: true }),
      });
      statuses.push(response.status);
    }
    expect(statuses).toEqual([200, 200, 429]);
  });

  it('uses the Workers Rate Limiting binding when one is configured', async () => {
    const binding = poolEnv.SUBSCRIBE_RATE_LIMITER;
    expect(binding).toBeDefined();
    const upstream = createScriptedFetch(upstreamHandler());
    const worker = createWorker({ fetch: upstream.fetch, write: () => undefined, sharedCache: null });
    // The in-memory limit would allow 100; the binding (limit 3 a minute) decides.
    const env = bindings({ SUBSCRIBE_RATE_LIMIT_PER_MINUTE: '100', SUBSCRIBE_RATE_LIMITER: binding });
    const statuses: number[] = [];
    for (let n = 0; n < 5; n += 1) {
      const response = await call(worker, env, '/api/subscribe', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'CF-Connecting-IP': '203.0.113.99' },
        body: JSON.stringify({ email: `limited${n}@example.com`, optInAttestation: true }),
      });
      statuses.push(response.status);
    }
    expect(statuses).toEqual([200, 200, 200, 429, 429]);
  });

  it('keeps the background refresh of a stale entry alive with waitUntil', async () => {
    const clock = createFakeClock();
    let subject = 'Original';
    const upstream = createScriptedFetch((entry, index) => upstreamHandler(subject)(entry, index));
    const worker = createWorker({ fetch: upstream.fetch, now: clock.now, write: () => undefined, sharedCache: null });
    const env = bindings();
    await call(worker, env, '/api/issues/first-issue');
    subject = 'Revised';
    clock.advance(61_000);

    const ctx = createExecutionContext();
    const stale = await worker.fetch(new Request('https://bff.example/api/issues/first-issue'), env, ctx);
    expect(stale.headers.get('x-cache')).toBe('STALE');
    expect(((await stale.json()) as { data: { subject: string } }).data.subject).toBe('Original');
    await waitOnExecutionContext(ctx);

    const fresh = await call(worker, env, '/api/issues/first-issue');
    expect(fresh.headers.get('x-cache')).toBe('HIT');
    expect(((await fresh.json()) as { data: { subject: string } }).data.subject).toBe('Revised');
    // The issue and the archive index read for its neighbours (its page, and the page that adds
    // nothing), then both again: the index the copy is checked against, and the issue by slug.
    expect(upstream.calls.map((call) => call.url.pathname.split('/').at(-1))).toEqual([
      'first-issue',
      'issues',
      'issues',
      'issues',
      'issues',
      'first-issue',
    ]);
  });
});

describe('Cache API tier shared by isolates (workerd)', () => {
  const ROUTES = ['/api/issues', '/api/issues/first-issue', '/api/categories'];

  /** N isolates, each with its own in-memory cache, all reading the three routes once. */
  async function upstreamCallsFor(isolates: number, sharedCache: Cache | null) {
    const clock = createFakeClock();
    const upstream = createScriptedFetch(upstreamHandler());
    const env = bindings();
    for (let i = 0; i < isolates; i += 1) {
      const worker = createWorker({ fetch: upstream.fetch, now: clock.now, write: () => undefined, sharedCache });
      for (const path of ROUTES) expect((await call(worker, env, path)).status).toBe(200);
    }
    return upstream.calls.length;
  }

  it('saves every cold upstream read after the first isolate (measured: 5 isolates × 3 routes)', async () => {
    // Four upstream calls per isolate: the archive's page and the page after it that adds nothing, an
    // issue, the categories (counted in the archive already read).
    const without = await upstreamCallsFor(5, null);
    const withTier = await upstreamCallsFor(5, caches.default);
    expect(without).toBe(20);
    expect(withTier).toBe(4);
  });

  it('serves a new isolate the stale shared copy while the upstream is down, and nothing once it is too old', async () => {
    const clock = createFakeClock();
    let down = false;
    const upstream = createScriptedFetch((entry, index) =>
      down ? new Response('unavailable', { status: 503 }) : upstreamHandler()(entry, index),
    );
    const env = bindings();
    const first = createWorker({ fetch: upstream.fetch, now: clock.now, write: () => undefined, sharedCache: caches.default });
    expect((await call(first, env, '/api/categories')).status).toBe(200);

    down = true;
    clock.advance(10 * 60_000);
    const second = createWorker({ fetch: upstream.fetch, now: clock.now, write: () => undefined, sharedCache: caches.default });
    const stale = await call(second, env, '/api/categories');
    expect(stale.status).toBe(200);
    // A copy fetched ten minutes ago is past its 60 s TTL, whichever isolate stored it.
    expect(stale.headers.get('x-cache')).toBe('STALE');
    expect(await stale.json()).toEqual({ ok: true, data: [] });

    clock.advance(2 * 86_400_000);
    const third = createWorker({ fetch: upstream.fetch, now: clock.now, write: () => undefined, sharedCache: caches.default });
    expect((await call(third, env, '/api/categories')).status).toBe(502);
  });

  it('answers a new isolate at once with a shared copy within stale-while-revalidate, refreshing it behind the response for every isolate', async () => {
    const clock = createFakeClock();
    let subject = 'Original';
    let release: () => void = () => undefined;
    let hold = false;
    const upstream = createScriptedFetch(async (entry, index) => {
      if (hold) await new Promise<void>((resolve) => (release = resolve));
      return upstreamHandler(subject)(entry, index);
    });
    const env = bindings({ CACHE_TTL_SECONDS: '60' });
    const isolate = () => createWorker({ fetch: upstream.fetch, now: clock.now, write: () => undefined, sharedCache: caches.default });
    expect((await call(isolate(), env, '/api/issues/first-issue')).status).toBe(200);

    subject = 'Revised';
    hold = true;
    clock.advance(61_000);
    const ctx = createExecutionContext();
    // Answered while the upstream has not answered the refresh yet: nobody waits for it.
    const response = await isolate().fetch(new Request('https://bff.example/api/issues/first-issue'), env, ctx);
    expect(response.status).toBe(200);
    expect(response.headers.get('x-cache')).toBe('STALE');
    expect(((await response.json()) as { data: { subject: string } }).data.subject).toBe('Original');
    // The first isolate's issue and archive (for the neighbours), then this refresh's read by slug, held.
    expect(upstream.calls).toHaveLength(3 + 1);
    hold = false;
    release();
    await waitOnExecutionContext(ctx);
    // Its neighbours come from the shared archive, stale too, so refreshed behind as well.
    expect(upstream.calls).toHaveLength(3 + 1 + 2);

    // The refresh replaced the shared copy: the next isolate gets the new content, no call.
    const next = await call(isolate(), env, '/api/issues/first-issue');
    expect(next.headers.get('x-cache')).toBe('MISS');
    expect(((await next.json()) as { data: { subject: string } }).data.subject).toBe('Revised');
    expect(upstream.calls).toHaveLength(3 + 1 + 2);
  });

  it('makes a new isolate wait for the upstream once the shared copy is past stale-while-revalidate, and serves the new content', async () => {
    const clock = createFakeClock();
    let subject = 'Original';
    const upstream = createScriptedFetch((entry, index) => upstreamHandler(subject)(entry, index));
    const env = bindings({ CACHE_TTL_SECONDS: '60' });
    const isolateA = createWorker({ fetch: upstream.fetch, now: clock.now, write: () => undefined, sharedCache: caches.default });
    expect((await call(isolateA, env, '/api/issues/first-issue')).status).toBe(200);

    subject = 'Revised';
    clock.advance(61_000 + 300_000);
    const isolateB = createWorker({ fetch: upstream.fetch, now: clock.now, write: () => undefined, sharedCache: caches.default });
    const response = await call(isolateB, env, '/api/issues/first-issue');
    expect(response.status).toBe(200);
    expect(response.headers.get('x-cache')).toBe('MISS');
    expect(((await response.json()) as { data: { subject: string } }).data.subject).toBe('Revised');
    // Each isolate: the issue, then the archive for its neighbours (its page and the page after).
    expect(upstream.calls).toHaveLength(2 * 3);
  });

  it('drops the shared copy of an issue the refresh finds gone', async () => {
    const clock = createFakeClock();
    let gone = false;
    const upstream = createScriptedFetch((entry, index) =>
      gone && entry.url.pathname.includes('/by-slug/')
        ? jsonResponse({ ok: false, error: { code: 'NOT_FOUND', message: 'not found' } }, 404)
        : upstreamHandler()(entry, index),
    );
    const env = bindings({ CACHE_TTL_SECONDS: '60' });
    const isolate = () => createWorker({ fetch: upstream.fetch, now: clock.now, write: () => undefined, sharedCache: caches.default });
    expect((await call(isolate(), env, '/api/issues/first-issue')).status).toBe(200);

    gone = true;
    clock.advance(61_000);
    expect((await call(isolate(), env, '/api/issues/first-issue')).headers.get('x-cache')).toBe('STALE');
    // The first read (the issue and the archive for its neighbours), then the refresh by slug.
    expect(upstream.calls).toHaveLength(3 + 1);
    expect((await call(isolate(), env, '/api/issues/first-issue')).status).toBe(404);
    expect(upstream.calls).toHaveLength(3 + 2);
  });

  it('keeps apart the entries of two Workers with different keys on one base URL and one caches.default, and never puts a key in a cache URL', async () => {
    const clock = createFakeClock();
    const urls: string[] = [];
    const shared = createRecordingCache(caches.default, urls);
    // The categories, and an empty archive to count their issues in.
    const categoriesOf = (name: string) =>
      createScriptedFetch((entry) =>
        jsonResponse({ ok: true, data: entry.url.pathname.endsWith('/categories') ? [{ id: name, name, slug: name.toLowerCase() }] : [] }),
      );
    const upstreamA = categoriesOf('Alpha');
    const upstreamB = categoriesOf('Beta');
    const envA = bindings();
    const envB = { ...envA, NEWSLETTER_API_KEY: OTHER_API_KEY };
    const isolate = (fetch: typeof globalThis.fetch) =>
      createWorker({ fetch, now: clock.now, write: () => undefined, sharedCache: shared });
    const namesFrom = async (response: Response) => ((await response.json()) as { data: { name: string }[] }).data.map((c) => c.name);

    expect(await namesFrom(await call(isolate(upstreamA.fetch), envA, '/api/categories'))).toEqual(['Alpha']);
    expect(await namesFrom(await call(isolate(upstreamB.fetch), envB, '/api/categories'))).toEqual(['Beta']);
    // Its categories and its archive, once each.
    expect(upstreamB.calls).toHaveLength(2);
    // The same key on another isolate still shares: the tier works, it is only partitioned.
    expect(await namesFrom(await call(isolate(upstreamA.fetch), envA, '/api/categories'))).toEqual(['Alpha']);
    expect(upstreamA.calls).toHaveLength(2);

    // The categories and the archive, for each key.
    expect(new Set(urls).size).toBe(4);
    for (const url of urls) {
      for (const key of [TEST_API_KEY, OTHER_API_KEY]) {
        expect(url).not.toContain(key);
        expect(url).not.toContain(encodeURIComponent(key));
      }
    }
  });

  it('treats a shared entry that does not decode as a miss, reads the upstream and replaces it', async () => {
    const clock = createFakeClock();
    const upstream = createScriptedFetch(upstreamHandler());
    const env = bindings();
    // An entry under the key the Worker reads, as another version might have left it.
    const tier = createWorkersSharedCache(caches.default, {
      namespace: env.NEWSLETTER_API_BASE_URL,
      apiKey: TEST_API_KEY,
      maxAgeSeconds: 600,
    });
    await tier.put('categories', { payload: JSON.stringify({ kind: 'json', body: { ok: true } }), fetchedAt: clock.now() });

    const worker = createWorker({ fetch: upstream.fetch, now: clock.now, write: () => undefined, sharedCache: caches.default });
    const response = await call(worker, env, '/api/categories');
    expect(response.status).toBe(200);
    expect(response.headers.get('x-cache')).toBe('MISS');
    expect(await response.json()).toEqual({ ok: true, data: [] });
    // The categories, and the archive (its page and the page that adds nothing) to count in.
    expect(upstream.calls.map((call) => call.url.pathname.split('/').at(-1)).sort()).toEqual(['categories', 'issues', 'issues']);
    expect(JSON.parse((await tier.get('categories'))?.payload ?? 'null')).toMatchObject({ kind: 'json', body: '{"ok":true,"data":[]}' });
  });

  it('never stores an error in the shared tier', async () => {
    const clock = createFakeClock();
    let down = true;
    const upstream = createScriptedFetch((entry, index) =>
      down ? new Response('unavailable', { status: 503 }) : upstreamHandler()(entry, index),
    );
    const env = bindings();
    const first = createWorker({ fetch: upstream.fetch, now: clock.now, write: () => undefined, sharedCache: caches.default });
    expect((await call(first, env, '/api/categories')).status).toBe(502);
    down = false;
    const second = createWorker({ fetch: upstream.fetch, now: clock.now, write: () => undefined, sharedCache: caches.default });
    expect((await call(second, env, '/api/categories')).status).toBe(200);
  });
});

describe('REDIS_URL on Workers', () => {
  it('is ignored with one warn line per isolate: the platform shares the cache tier and the limit', async () => {
    const lines: string[] = [];
    const worker = createWorker({
      fetch: createScriptedFetch(upstreamHandler()).fetch,
      write: (line) => lines.push(line),
      sharedCache: null,
    });
    const env = bindings({ REDIS_URL: 'redis://:hunter2-not-real@cache.example:6379' });
    expect((await call(worker, env, '/api/categories')).status).toBe(200);
    expect((await call(worker, env, '/api/categories')).status).toBe(200);
    const ignored = lines.filter((line) => line.includes('"redis_url_ignored"'));
    expect(ignored).toHaveLength(1);
    expect(ignored[0]).toContain('"level":"warn"');
    expect(lines.join('\n')).not.toContain('hunter2');
  });
});
