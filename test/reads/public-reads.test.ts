import { describe, expect, it } from 'vitest';
import { cachePolicies } from '../../src/core/reads/cache-policies.js';
import { createPublicReads } from '../../src/core/reads/public-reads.js';
import type { UpstreamClient } from '../../src/core/upstream/newsletter-api.js';
import { UpstreamError } from '../../src/core/upstream/transport.js';
import { createExecutionContext, createFakeClock, createScriptedFetch, createTestApp, jsonResponse } from '../helpers.js';
import { publicIssue as issue } from './fixtures.js';

/** An upstream client double that knows the slugs starting with "known-". */
function createFakeUpstream() {
  const calls: string[] = [];
  const upstream: UpstreamClient = {
    listAllPublicIssues: async () => {
      calls.push('archive');
      return [issue('first')];
    },
    getIssueBySlug: async (slug) => {
      calls.push(slug);
      if (slug.startsWith('known-')) return issue(slug, { contentHtml: `<p>${'x'.repeat(2000)}</p>` });
      throw new UpstreamError('not_found', 'upstream answered not found (404)', { status: 404 });
    },
    listCategories: async () => [],
    createSubscriber: async () => ({}),
  };
  return { upstream, calls };
}

const MAX_BYTES = 1024 * 1024;

function publicReadsOver(upstream: UpstreamClient, now: () => number, more: Partial<Parameters<typeof createPublicReads>[0]> = {}) {
  return createPublicReads({
    upstream,
    now,
    policies: cachePolicies({ cacheTtlSeconds: 60, categoriesTtlSeconds: 60 }),
    maxBytes: MAX_BYTES,
    notFoundTtlSeconds: 30,
    archiveResyncSeconds: 600,
    indexRefreshMinIntervalMs: 5_000,
    archiveMaxIssues: 5000,
    ...more,
  });
}

function createReads(overrides: { archiveMaxIssues?: number; maxBytes?: number } = {}) {
  const clock = createFakeClock();
  const { upstream, calls } = createFakeUpstream();
  return { reads: publicReadsOver(upstream, clock.now, overrides), calls, clock };
}

describe('public reads', () => {
  it('remembers an unknown slug as a 404 for the negative TTL, then asks again', async () => {
    const { reads, calls, clock } = createReads();
    await expect(reads.issue('nope')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    clock.advance(29_000);
    await expect(reads.issue('nope')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect(calls).toEqual(['nope']);
    clock.advance(2_000);
    await expect(reads.issue('nope')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect(calls).toEqual(['nope', 'nope']);
  });

  it("answers a slug's fresh hit again, counted, until any copy changes or it goes stale", async () => {
    const { reads, calls, clock } = createReads();
    await reads.archivePage({ limit: 20, offset: 0 }); // seeds the copy of "first" from its row
    const hitsBefore = reads.stats().hits;
    const first = reads.issue('first');
    expect(first).toMatchObject({ state: 'HIT' });
    expect(reads.issue('first')).toBe(first);
    expect(reads.stats().hits).toBe(hitsBefore + 2);
    // Another copy is set: the issue is read from the cache again, the same bytes in a new read.
    await reads.categories();
    const again = reads.issue('first');
    expect(again).not.toBe(first);
    expect(again).toMatchObject({ state: 'HIT', rendered: (first as { rendered: unknown }).rendered });
    expect(reads.issue('first')).toBe(again);
    expect(calls).toEqual(['archive']);
    clock.advance(60_001);
    expect(await reads.issue('first')).toMatchObject({ state: 'STALE' });
  });

  it('renews the recency of an issue answered again from its fresh hit: the cache evicts the one read least', async () => {
    // An archive cut off at its cap settles nothing: every slug is read by slug.
    const sizing = createReads({ archiveMaxIssues: 1 }).reads;
    await sizing.issue('known-a');
    const oneIssueLess = sizing.stats().bytes;
    await sizing.issue('known-b');
    const perIssue = sizing.stats().bytes - oneIssueLess;
    // Room for the archive and two issues (upstream data is 70% of CACHE_MAX_BYTES): a third evicts one.
    const { reads, calls } = createReads({ archiveMaxIssues: 1, maxBytes: Math.ceil((sizing.stats().bytes + perIssue / 2) / 0.7) });
    await reads.issue('known-a');
    await reads.issue('known-b');
    expect([reads.issue('known-a'), reads.issue('known-b')]).toMatchObject([{ state: 'HIT' }, { state: 'HIT' }]);
    for (let i = 0; i < 3; i += 1) reads.issue('known-a'); // answered again from the fresh hit
    await reads.archivePage({ limit: 20, offset: 0 });
    await reads.issue('known-c');
    expect(reads.issue('known-a')).toMatchObject({ state: 'HIT' });
    await reads.issue('known-b');
    expect(calls.filter((slug) => slug.startsWith('known-'))).toEqual(['known-a', 'known-b', 'known-c', 'known-b']);
  });

  // 100,000 reads one after another: slow on a busy machine, however fast each one is.
  it('keeps entries and bytes within CACHE_MAX_BYTES when 100,000 distinct slugs are requested', async () => {
    // An archive cut off at its cap (one issue) settles nothing, so every slug is read by slug.
    const { reads, calls } = createReads({ archiveMaxIssues: 1 });
    await reads.archivePage({ limit: 20, offset: 0 });
    let peakBytes = 0;
    for (let i = 0; i < 100_000; i += 1) {
      // Half known issues (each ~4 KB cached), half unknown slugs from a scanning bot.
      const slug = i % 2 === 0 ? `known-${i}` : `unknown-${i}`;
      await Promise.resolve(reads.issue(slug)).catch(() => undefined);
      if (i % 1000 === 0) {
        const stats = reads.stats();
        peakBytes = Math.max(peakBytes, stats.bytes + stats.renderedPageBytes + stats.notFoundBytes);
      }
    }
    const stats = reads.stats();
    expect(calls).toHaveLength(100_001);
    expect(stats.bytes + stats.renderedPageBytes + stats.notFoundBytes).toBeLessThanOrEqual(MAX_BYTES);
    expect(peakBytes).toBeLessThanOrEqual(MAX_BYTES);
    expect(stats.notFoundBytes).toBeLessThanOrEqual(MAX_BYTES * 0.05);
    expect(stats.entries).toBeLessThan(400);
  }, 60_000);

  it('is not evicted by a slug scan: the archive stays cached while 50,000 unknown slugs are tried', async () => {
    const { reads, calls } = createReads();
    await reads.archivePage({ limit: 20, offset: 0 });
    for (let i = 0; i < 50_000; i += 1) await Promise.resolve(reads.issue(`unknown-${i}`)).catch(() => undefined);
    const page = await reads.archivePage({ limit: 20, offset: 0 });
    expect(page.state).toBe('HIT');
    expect(calls.filter((call) => call === 'archive')).toHaveLength(1);
  });
  it('answers an issue whose read by slug an archive refresh overtook, seeding the same copy meanwhile', async () => {
    const clock = createFakeClock();
    let rows = [issue('late', { contentHtml: undefined })];
    let release: (() => void) | undefined;
    const upstream: UpstreamClient = {
      listAllPublicIssues: async () => rows,
      getIssueBySlug: async (slug) => {
        await new Promise<void>((resolve) => (release = resolve));
        return issue(slug, { contentHtml: '<p>read by slug</p>' });
      },
      listCategories: async () => [],
      createSubscriber: async () => ({}),
    };
    const reads = publicReadsOver(upstream, clock.now);
    await reads.archivePage({ limit: 20, offset: 0 });
    const turn = () => new Promise((resolve) => setTimeout(resolve, 0));
    const pending = reads.issue('late');
    for (let step = 0; step < 50 && release === undefined; step += 1) await turn();
    expect(release).toBeDefined();
    // The index goes stale while the slug is read; its refresh lists the letter and keeps it as the issue's copy.
    clock.advance(61_000);
    rows = [issue('late', { contentHtml: '<p>listed</p>' })];
    expect((await reads.archivePage({ limit: 20, offset: 0 })).state).toBe('STALE');
    for (let step = 0; step < 50 && (await reads.archivePage({ limit: 20, offset: 0 })).state !== 'HIT'; step += 1) await turn();
    release?.();
    const answered = await pending;
    expect(JSON.parse(answered.rendered.body)).toMatchObject({ ok: true, data: { slug: 'late', contentHtml: '<p>read by slug</p>' } });
  });

  it('keeps the edit read by slug when a seeded copy the encoder kept nothing of finishes compressing meanwhile', async () => {
    const clock = createFakeClock();
    let rows = [issue('small', { updatedAt: '2026-01-01T00:00:00.000Z', contentHtml: '<p>first</p>' })];
    const bySlug: string[] = [];
    let releaseRead: (() => void) | undefined;
    const upstream: UpstreamClient = {
      listAllPublicIssues: async () => rows,
      getIssueBySlug: async (slug) => {
        bySlug.push(slug);
        if (bySlug.length === 1) await new Promise<void>((resolve) => (releaseRead = resolve));
        return issue(slug, { updatedAt: '2026-01-02T00:00:00.000Z', contentHtml: '<p>edited</p>' });
      },
      listCategories: async () => [],
      createSubscriber: async () => ({}),
    };
    // As the Node encoder does for a body too small to compress: no copy; the first call waits until told.
    let releaseEncoder: (() => void) | undefined;
    let encoderCalls = 0;
    const encodeBody = async () => {
      encoderCalls += 1;
      if (encoderCalls === 1) await new Promise<void>((resolve) => (releaseEncoder = resolve));
      return [];
    };
    const reads = publicReadsOver(upstream, clock.now, { encodeBody });
    const turn = () => new Promise((resolve) => setTimeout(resolve, 0));
    // The letter listed is seeded as the issue's copy and queued for compressing.
    await reads.archivePage({ limit: 20, offset: 0 });
    for (let step = 0; step < 50 && releaseEncoder === undefined; step += 1) await turn();
    expect(releaseEncoder).toBeDefined();
    // A refreshed index shows the issue edited: its copy is read again by slug.
    clock.advance(1_000);
    rows = [issue('small', { updatedAt: '2026-01-02T00:00:00.000Z', contentHtml: undefined })];
    await reads.refreshFromUpstream();
    const pending = reads.issue('small');
    for (let step = 0; step < 50 && releaseRead === undefined; step += 1) await turn();
    expect(releaseRead).toBeDefined();
    releaseEncoder?.();
    for (let step = 0; step < 5; step += 1) await turn();
    releaseRead?.();
    expect(JSON.parse((await pending).rendered.body)).toMatchObject({ data: { contentHtml: '<p>edited</p>' } });
    const again = await reads.issue('small');
    expect(JSON.parse(again.rendered.body)).toMatchObject({ data: { contentHtml: '<p>edited</p>' } });
    expect(again.state).toBe('HIT');
    expect(bySlug).toEqual(['small']);
  });
});

describe('HTTP caching of the public GET routes', () => {
  it('serves 10,000 requests with junk query strings from one cached index and one upstream read', async () => {
    const { fetch, calls } = createScriptedFetch((call) =>
      jsonResponse({ ok: true, data: call.url.pathname.endsWith('/issues') ? [issue('first')] : [] }),
    );
    const { app, stats } = createTestApp({ fetch });
    const etags = new Set<string>();
    for (let i = 0; i < 10_000; i += 1) {
      const response = await app.request(`/api/issues?utm_source=${i}&x${i}=${'y'.repeat(i % 50)}&_=${i * 7}`);
      expect(response.status).toBe(200);
      etags.add(response.headers.get('etag') ?? '');
    }
    // One archive load: its page, and the page after it that adds nothing.
    expect(calls).toHaveLength(2);
    expect(etags.size).toBe(1);
    // The index, and the one letter its list row carried.
    expect(stats()).toMatchObject({ entries: 2, renderedPages: 1 });
  });

  it('keeps the ETag across hits, answers a matching If-None-Match with 304, and changes it when the content changes', async () => {
    let subject = 'First subject';
    const { fetch } = createScriptedFetch((call) =>
      jsonResponse({
        ok: true,
        data: call.url.pathname.endsWith('/issues') ? [issue('a-slug', { subject })] : issue('a-slug', { subject }),
      }),
    );
    const { app, clock } = createTestApp({ fetch });
    const first = await app.request('/api/issues/a-slug');
    const etag = first.headers.get('etag');
    expect(etag).toMatch(/^"[^"]+"$/);
    const hit = await app.request('/api/issues/a-slug');
    expect(hit.headers.get('x-cache')).toBe('HIT');
    expect(hit.headers.get('etag')).toBe(etag);
    expect(hit.headers.get('age')).toBeNull();

    const notModified = await app.request('/api/issues/a-slug', { headers: { 'If-None-Match': etag ?? '' } });
    expect(notModified.status).toBe(304);
    expect(await notModified.text()).toBe('');
    expect(notModified.headers.get('etag')).toBe(etag);

    subject = 'Corrected subject';
    clock.advance(61_000);
    const background = createExecutionContext();
    const stale = await app.request('/api/issues/a-slug', { headers: { 'If-None-Match': etag ?? '' } }, {}, background.ctx);
    expect(stale.status).toBe(304);
    expect(stale.headers.get('x-cache')).toBe('STALE');
    // Past max-age=60 already: a downstream cache must not count a fresh 60 s from now.
    expect(stale.headers.get('age')).toBe('61');
    // One refresh for the issue, and one for the archive index its copy is checked against.
    expect(background.pending).toHaveLength(2);
    await background.settle();
    const fresh = await app.request('/api/issues/a-slug', { headers: { 'If-None-Match': etag ?? '' } });
    expect(fresh.status).toBe(200);
    expect(fresh.headers.get('etag')).not.toBe(etag);
    expect(((await fresh.json()) as { data: { subject: string } }).data.subject).toBe('Corrected subject');
  });

  it.each(['/api/issues', '/api/issues/a-slug', '/api/categories'])(
    'sends public Cache-Control with max-age, stale-while-revalidate and stale-if-error on %s',
    async (path) => {
      const { fetch } = createScriptedFetch((call) => {
        if (call.url.pathname.endsWith('/a-slug')) return jsonResponse({ ok: true, data: issue('a-slug') });
        return jsonResponse({ ok: true, data: [] });
      });
      const { app } = createTestApp({ fetch, env: { CACHE_TTL_SECONDS: '120' } });
      const response = await app.request(path);
      expect(response.status).toBe(200);
      expect(response.headers.get('cache-control')).toBe('public, max-age=120, stale-while-revalidate=300, stale-if-error=86400');
    },
  );

  it('says how old a copy served under stale-if-error is, on the archive and on an issue', async () => {
    let failing = false;
    const { fetch } = createScriptedFetch((call) => {
      if (failing) return jsonResponse({ ok: false, error: { code: 'INTERNAL', message: 'down' } }, 500);
      if (call.url.pathname.endsWith('/a-slug')) return jsonResponse({ ok: true, data: issue('a-slug') });
      return jsonResponse({ ok: true, data: [issue('a-slug')] });
    });
    const { app, clock } = createTestApp({ fetch });
    for (const path of ['/api/issues', '/api/issues/a-slug']) expect((await app.request(path)).status).toBe(200);
    failing = true;
    clock.advance(3 * 3600_000);
    for (const path of ['/api/issues?limit=5', '/api/issues/a-slug']) {
      const response = await app.request(path);
      expect(response.status).toBe(200);
      expect(response.headers.get('x-cache')).toBe('STALE');
      expect(response.headers.get('age')).toBe(String(3 * 3600));
    }
  });

  it('logs a warning when the archive is too large to keep in CACHE_MAX_BYTES, and still serves it', async () => {
    // 400 issues with long previews: more than a third of a 1 MiB budget once indexed.
    const archive = Array.from({ length: 400 }, (_, n) => issue(`issue-${n}`, { previewText: 'p'.repeat(600) }));
    const { fetch, calls } = createScriptedFetch((call) => {
      const limit = Number(call.url.searchParams.get('limit'));
      const offset = Number(call.url.searchParams.get('offset') ?? 0);
      return jsonResponse({ ok: true, data: archive.slice(offset, offset + limit) });
    });
    const { app, logs } = createTestApp({ fetch, env: { CACHE_MAX_BYTES: String(1024 * 1024) } });
    const first = await app.request('/api/issues?limit=1');
    expect(first.status).toBe(200);
    expect(((await first.json()) as { meta: { total: number } }).meta.total).toBe(400);
    const callsAfterFirst = calls.length;
    // Not kept: the next request reads the whole archive again.
    expect((await app.request('/api/issues?limit=1')).headers.get('x-cache')).toBe('MISS');
    expect(calls.length).toBe(2 * callsAfterFirst);
    const warnings = logs.entries().filter((entry) => entry.event === 'cache_entry_too_large');
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toMatchObject({ level: 'warn', key: 'archive' });
    expect(warnings[0]!.bytes as number).toBeGreaterThan(warnings[0]!.maxEntryBytes as number);
    expect(String(warnings[0]!.hint)).toContain('CACHE_MAX_BYTES');
  });

  it('logs no such warning for an archive that fits', async () => {
    const { app, logs } = createTestApp({ env: { CACHE_MAX_BYTES: String(1024 * 1024) } });
    await app.request('/api/issues');
    expect((await app.request('/api/issues')).headers.get('x-cache')).toBe('HIT');
    expect(logs.entries().filter((entry) => entry.event === 'cache_entry_too_large')).toEqual([]);
  });

  it('sends no-store on errors and on subscribe', async () => {
    const { app } = createTestApp();
    const notFound = await app.request('/api/issues/no-such-issue');
    expect(notFound.status).toBe(404);
    expect(notFound.headers.get('cache-control')).toBe('no-store');
    const subscribe = await app.request('/api/subscribe', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ email: 'reader@example.com', optInAttestation: true }),
    });
    expect(subscribe.status).toBe(200);
    expect(subscribe.headers.get('cache-control')).toBe('no-store');
  });

  /** The upstream when it works: one issue, listed, and no categories. */
  function recovered(call: { url: URL }): Response {
    if (call.url.pathname.endsWith('/categories')) return jsonResponse({ ok: true, data: [] });
    if (!call.url.pathname.endsWith('/issues')) return jsonResponse({ ok: true, data: issue('some-slug') });
    return jsonResponse({ ok: true, data: Number(call.url.searchParams.get('offset') ?? 0) === 0 ? [issue('some-slug')] : [] });
  }

  // Upstream reads of one cold request: an issue is read by slug, then the archive (for its
  // neighbours); categories are read beside the archive (for their counts). A read of the archive
  // is its page and the page after it.
  describe.each([
    ['/api/issues/some-slug', 1, 1 + 2],
    ['/api/issues', 1, 2],
    ['/api/categories', 2, 1 + 2],
  ])('with five concurrent cold requests to %s', (path, reads, loadCalls) => {
    /** An upstream that answers `failure` until told otherwise, holding its first answer until released. */
    function createGatedUpstream(failure: () => Response) {
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      let failing = true;
      const { fetch, calls } = createScriptedFetch(async (call) => {
        await gate;
        return failing ? failure() : recovered(call);
      });
      return { fetch, calls, release, recover: () => (failing = false) };
    }

    /** Starts five requests at once and lets the upstream answer only once all of them wait on it. */
    async function fiveAtOnce(app: ReturnType<typeof createTestApp>['app'], release: () => void) {
      const requests = Array.from({ length: 5 }, () => app.request(path));
      for (let i = 0; i < 50; i += 1) await Promise.resolve();
      release();
      return Promise.all(requests);
    }

    it('answers every one 502 UPSTREAM_ERROR when the upstream fails with 500, from one upstream read, and caches nothing', async () => {
      const upstream = createGatedUpstream(() => jsonResponse({ ok: false, error: { code: 'INTERNAL' } }, 500));
      const { app, clock } = createTestApp({ fetch: upstream.fetch });
      const responses = await fiveAtOnce(app, upstream.release);
      for (const response of responses) {
        expect(response.status).toBe(502);
        expect(response.headers.get('cache-control')).toBe('no-store');
        expect(((await response.json()) as { error: { code: string } }).error.code).toBe('UPSTREAM_ERROR');
      }
      // Each read of the upstream once, retried twice on its 500: the five requests shared it.
      expect(upstream.calls).toHaveLength(3 * reads);

      // The next read waits out the pause the failure began (docs/upstream.md "Backing off a failing upstream").
      upstream.recover();
      const held = await app.request(path);
      expect(held.status).toBe(503);
      expect(held.headers.get('retry-after')).toBe('1');
      expect(upstream.calls).toHaveLength(3 * reads);
      clock.advance(1000);
      const next = await app.request(path);
      expect(next.status).toBe(200);
      expect(next.headers.get('x-cache')).toBe('MISS');
      expect(upstream.calls).toHaveLength(3 * reads + loadCalls);
    });

    it('answers every one 503 UPSTREAM_UNAVAILABLE with Retry-After when the upstream answers 429, from one upstream call', async () => {
      const upstream = createGatedUpstream(() => jsonResponse({ ok: false, error: { code: 'RATE_LIMITED' } }, 429, { 'Retry-After': '7' }));
      const { app, clock } = createTestApp({ fetch: upstream.fetch });
      const responses = await fiveAtOnce(app, upstream.release);
      for (const response of responses) {
        expect(response.status).toBe(503);
        expect(response.headers.get('retry-after')).toBe('7');
        expect(response.headers.get('cache-control')).toBe('no-store');
        expect(((await response.json()) as { error: { code: string } }).error.code).toBe('UPSTREAM_UNAVAILABLE');
      }
      expect(upstream.calls).toHaveLength(reads);

      upstream.recover();
      clock.advance(7_000);
      const next = await app.request(path);
      expect(next.status).toBe(200);
      expect(next.headers.get('x-cache')).toBe('MISS');
      expect(upstream.calls).toHaveLength(reads + loadCalls);
    });
  });

  it('answers a cold key with a failing upstream with 502 and caches nothing', async () => {
    let failing = true;
    const { fetch, calls } = createScriptedFetch(() =>
      failing ? new Response('<html>Bad gateway</html>', { status: 502 }) : jsonResponse({ ok: true, data: [] }),
    );
    const { app, clock } = createTestApp({ fetch });
    const failed = await app.request('/api/categories');
    expect(failed.status).toBe(502);
    failing = false;
    clock.advance(1000);
    const recovered = await app.request('/api/categories');
    expect(recovered.status).toBe(200);
    expect(recovered.headers.get('x-cache')).toBe('MISS');
    // Failing: the categories and the archive they are counted in, each tried three times; then
    // each once (an empty archive is one page).
    expect(calls).toHaveLength(3 * 2 + 2);
  });
});
