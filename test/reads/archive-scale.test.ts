import { describe, expect, it } from 'vitest';
import { createArchive, type ArchiveOptions } from '../support/fake-upstream/archive.js';
import { createFakeUpstream } from '../support/fake-upstream/fake.js';
import type { UpstreamVariant } from '../support/fake-upstream/variant.js';
import { createFakeClock, createTestApp, TEST_API_KEY } from '../helpers.js';

const LIST = 'GET /newsletter/issues';
const BY_SLUG = 'GET /newsletter/issues/by-slug/:slug';
const TTL_MS = 60_000;

/**
 * The app over the one fake upstream serving a publication shaped like a real one, with every
 * List Issues query recorded (its limit and offset) and what a refresh costs.
 */
function archiveSite(
  options: {
    archive?: ArchiveOptions;
    variant?: UpstreamVariant;
    env?: Record<string, string>;
    maxResponseBytes?: number;
    declareLength?: boolean;
  } = {},
) {
  const clock = createFakeClock(Date.UTC(2026, 1, 1));
  const fake = createFakeUpstream({
    apiKey: TEST_API_KEY,
    baseUrl: 'https://newsletter.test/v1',
    publication: createArchive({ issues: 450, contentBytes: 2_000, ...options.archive }),
    variant: options.variant ?? {},
    now: clock.now,
  });
  const queries: { limit: number; offset: number; conditional: boolean }[] = [];
  /** While true, List Issues answers 503 (and only it: an issue by slug still answers). */
  const lists = { failing: false };
  const fetch: typeof globalThis.fetch = async (input, init) => {
    const request = new Request(input, init);
    const url = new URL(request.url);
    if (url.pathname.endsWith('/newsletter/issues')) {
      const conditional = request.headers.has('if-none-match') || request.headers.has('if-modified-since');
      queries.push({ limit: Number(url.searchParams.get('limit')), offset: Number(url.searchParams.get('offset')), conditional });
      // A malformed answer: the index cannot be refreshed, and (unlike a 5xx) no back-off pause begins.
      if (lists.failing) return new Response('<html>unavailable</html>', { status: 200, headers: { 'content-type': 'text/html' } });
    }
    const answer = await fake.fetch(request);
    if (!options.declareLength || answer.status !== 200) return answer;
    // A Content-Length that says the body's size, as an HTTP upstream sends it.
    const body = new Uint8Array(await answer.arrayBuffer());
    const headers = new Headers(answer.headers);
    headers.set('Content-Length', String(body.byteLength));
    return new Response(body, { status: answer.status, headers });
  };
  const {
    app,
    clock: appClock,
    logs,
  } = createTestApp({
    fetch,
    clock,
    env: { NEWSLETTER_API_BASE_URL: fake.baseUrl, ...options.env },
    ...(options.maxResponseBytes && { upstreamOptions: { maxResponseBytes: options.maxResponseBytes } }),
  });
  const total = async () => {
    const response = await app.request('/api/issues?limit=1');
    expect(response.status).toBe(200);
    return ((await response.json()) as { meta: { total: number } }).meta.total;
  };
  const slugs = async (limit = 100) =>
    ((await (await app.request(`/api/issues?limit=${limit}`)).json()) as { data: { slug: string; subject: string }[] }).data;
  /** The issue's page: its status, and its subject and letter when it is a 200. */
  const page = async (slug: string) => {
    const response = await app.request(`/api/issues/${slug}`);
    const body = response.status === 200 ? ((await response.json()) as { data: { subject: string; contentHtml: string } }).data : undefined;
    return { status: response.status, subject: body?.subject, contentHtml: body?.contentHtml };
  };
  /** Lets what runs behind an answer (a refresh of a stale copy) land: a few turns of the event loop. */
  const settle = async () => {
    for (let turn = 0; turn < 20; turn += 1) await new Promise((resolve) => setTimeout(resolve, 0));
  };
  /**
   * A TTL later, archive reads until one is answered from the refreshed copy: the first is
   * answered stale while the refresh runs behind it (bounded: a few hundred turns of the event loop).
   */
  const refresh = async () => {
    appClock.advance(TTL_MS + 1);
    for (let turn = 0; turn < 500; turn += 1) {
      const response = await app.request('/api/issues?limit=1');
      if (response.headers.get('x-cache') !== 'STALE') return;
      await new Promise((resolve) => setTimeout(resolve, 0));
    }
    throw new Error('the archive refresh did not land');
  };
  return { app, fake, clock: appClock, queries, lists, total, slugs, page, settle, refresh, logs };
}

describe('an archive of fat rows', () => {
  it('asks again with fewer rows when a page is over the body cap, and remembers the size', async () => {
    // 200 rows of ~4 KB are ~0.9 MB; the cap is 300 KB, so pages of 50 rows (~220 KB) fit.
    const site = archiveSite({ archive: { issues: 450, contentBytes: 2_000, jsonBytes: 2_000 }, maxResponseBytes: 300_000 });
    expect(await site.total()).toBe(450);
    expect(site.queries.slice(0, 3).map((query) => query.limit)).toEqual([200, 100, 50]);
    // Every later page, and the whole re-read after ARCHIVE_RESYNC_SECONDS, ask 50 at once.
    expect(new Set(site.queries.slice(2).map((query) => query.limit))).toEqual(new Set([50]));
    site.clock.advance(601_000);
    const before = site.queries.length;
    await site.app.request('/api/issues?limit=1');
    await site.app.request('/api/issues?limit=1');
    expect(site.queries.length).toBeGreaterThan(before);
    expect(new Set(site.queries.slice(before).map((query) => query.limit))).toEqual(new Set([50]));
    expect(site.logs.entries().filter((entry) => entry.event === 'upstream_failure')).toEqual([]);
  });

  it('goes straight to pages of about 4 MiB when a page over the body cap declares its length, never reading one near the cap', async () => {
    // 200 rows of ~60 KB are ~12 MB, over a cap of 8 MB: halved (~6 MB) they would fit and be
    // read whole; the declared length says 50 rows (~3 MB) make a page of about 4 MiB.
    const site = archiveSite({
      archive: { issues: 450, contentBytes: 40_000, jsonBytes: 20_000 },
      maxResponseBytes: 8_000_000,
      declareLength: true,
    });
    expect(await site.total()).toBe(450);
    expect(site.queries.slice(0, 2).map((query) => query.limit)).toEqual([200, 50]);
    expect(new Set(site.queries.slice(1).map((query) => query.limit))).toEqual(new Set([50]));
  });

  it('follows a page heavier than 4 MiB with lighter ones', async () => {
    // 200 rows of ~30 KB are ~6 MB: the next pages ask 100 rows (~3 MB).
    const site = archiveSite({ archive: { issues: 450, contentBytes: 30_000 } });
    expect(await site.total()).toBe(450);
    // The short page at 400 is not taken as the end: the empty one at 450 is.
    expect(site.queries.map((query) => query.limit)).toEqual([200, 100, 100, 100, 100]);
    expect(site.queries.map((query) => query.offset)).toEqual([0, 200, 300, 400, 450]);
  });

  it('opens a listed issue from its list row, with no call by slug, while its letter fits the cache', async () => {
    const site = archiveSite({ archive: { issues: 450, contentBytes: 20_000 } });
    const [newest] = await site.slugs(1);
    const response = await site.app.request(`/api/issues/${newest!.slug}`);
    expect(response.status).toBe(200);
    expect(((await response.json()) as { data: { contentHtml: string } }).data.contentHtml).toHaveLength(20_000);
    expect(site.fake.callsFor(BY_SLUG)).toBe(0);
  });

  it('reads an issue by slug, as before, when the letters do not fit CACHE_MAX_BYTES', async () => {
    // 4 MiB of cache holds about 1.4 MiB of letters: the oldest of 450 rows of 20 KB is not among them.
    const site = archiveSite({ archive: { issues: 450, contentBytes: 20_000 }, env: { CACHE_MAX_BYTES: String(4 * 1024 * 1024) } });
    const all = await site.slugs(100);
    expect(all).toHaveLength(100);
    const oldest = (await (await site.app.request('/api/issues?limit=1&offset=449')).json()) as { data: { slug: string }[] };
    expect((await site.app.request(`/api/issues/${oldest.data[0]!.slug}`)).status).toBe(200);
    expect(site.fake.callsFor(BY_SLUG)).toBe(1);
    expect((await site.app.request(`/api/issues/${all[0]!.slug}`)).status).toBe(200);
    expect(site.fake.callsFor(BY_SLUG)).toBe(1);
  });
});

describe('keeping the archive fresh', () => {
  const HEAD = { limit: 10, offset: 0, conditional: false };
  /** The fake's default order (each letter created the day before it is sent), and an order by sending. */
  const ORDERS = [
    { upstream: 'newest createdAt first, each letter drafted the day before it is sent', variant: {} as UpstreamVariant },
    { upstream: 'newest sentAt first', variant: { order: 'newest-sent' } as UpstreamVariant },
  ];

  it.each(ORDERS)(
    'reads one page of the 10 newest rows per refresh from an upstream listing $upstream: six TTLs with nothing new cost under 10% of one whole read',
    async ({ variant }) => {
      const site = archiveSite({ archive: { issues: 1_000 }, variant });
      expect(await site.total()).toBe(1_000);
      const cold = site.queries.length;
      const whole = site.fake.bytesServed()[LIST]!;
      for (let ttl = 0; ttl < 6; ttl += 1) await site.refresh();
      expect(site.queries.slice(cold)).toEqual(Array.from({ length: 6 }, () => HEAD));
      expect((site.fake.bytesServed()[LIST]! - whole) / whole).toBeLessThan(0.1);
      expect(await site.total()).toBe(1_000);
    },
  );

  it.each(ORDERS)('lists a new issue at the next refresh, from one head page, when the upstream lists $upstream', async ({ variant }) => {
    const site = archiveSite({ variant });
    expect(await site.total()).toBe(450);
    site.fake.publish('fresh-off-the-press');
    const before = site.queries.length;
    await site.refresh();
    expect(site.queries.slice(before)).toEqual([HEAD]);
    expect(await site.total()).toBe(451);
    expect((await site.slugs(1))[0]!.slug).toBe('fresh-off-the-press');
    // Its letter came with the row.
    expect((await site.page('fresh-off-the-press')).status).toBe(200);
    expect(site.fake.callsFor(BY_SLUG)).toBe(0);
  });

  it.each(ORDERS)(
    'serves an edit in the head window at the next refresh, on the archive and on the issue page ($upstream)',
    async ({ variant }) => {
      const site = archiveSite({ variant });
      const third = (await site.slugs(3))[2]!.slug;
      expect((await site.page(third)).status).toBe(200);
      site.fake.edit(third, { subject: 'A corrected subject', contentHtml: '<p>Corrected</p>' });
      await site.refresh();
      expect((await site.slugs(3))[2]).toMatchObject({ slug: third, subject: 'A corrected subject' });
      expect(await site.page(third)).toEqual({ status: 200, subject: 'A corrected subject', contentHtml: '<p>Corrected</p>' });
      expect(site.fake.callsFor(BY_SLUG)).toBe(0);
    },
  );

  it('serves an edit of an issue read by slug as soon as the index shows it, though the copy is still fresh: the copy is read again', async () => {
    const site = archiveSite({ variant: { listWithoutLetters: true } });
    const newest = (await site.slugs(1))[0]!.slug;
    // Opened 30 s after the index was read: its copy outlives the index's TTL by as much.
    site.clock.advance(30_000);
    expect((await site.page(newest)).contentHtml).not.toBe('<p>Corrected</p>');
    site.fake.edit(newest, { contentHtml: '<p>Corrected</p>' });
    await site.refresh();
    expect(await site.page(newest)).toMatchObject({ status: 200, contentHtml: '<p>Corrected</p>' });
    expect(site.fake.slugCalls(newest)).toBe(2);
    // Its honest twin: an issue nobody edited keeps its copy, with no second call.
    const second = (await site.slugs(2))[1]!.slug;
    expect((await site.page(second)).status).toBe(200);
    await site.refresh();
    expect((await site.page(second)).status).toBe(200);
    expect(site.fake.slugCalls(second)).toBe(1);
  });

  it("reads an issue copy past its TTL again when the index could not be refreshed, rather than keep it on the stale index's word", async () => {
    const site = archiveSite({ variant: { listWithoutLetters: true } });
    const newest = (await site.slugs(1))[0]!.slug;
    expect((await site.page(newest)).status).toBe(200);
    site.fake.edit(newest, { contentHtml: '<p>Corrected</p>' });
    site.lists.failing = true;
    site.clock.advance(TTL_MS + 1);
    // Answered stale at once; the refresh behind it finds no fresher index and reads the issue.
    expect((await site.page(newest)).status).toBe(200);
    await site.settle();
    expect(site.fake.slugCalls(newest)).toBe(2);
    expect(await site.page(newest)).toMatchObject({ status: 200, contentHtml: '<p>Corrected</p>' });
  });

  it('takes an issue unpublished in the head window off the archive at the next refresh, and its page answers 404', async () => {
    const site = archiveSite();
    const second = (await site.slugs(2))[1]!.slug;
    expect((await site.page(second)).status).toBe(200);
    site.fake.unpublish(second);
    const before = site.queries.length;
    await site.refresh();
    expect(site.queries.slice(before)).toEqual([HEAD]);
    expect(await site.total()).toBe(449);
    expect((await site.slugs(5)).map((issue) => issue.slug)).not.toContain(second);
    expect((await site.page(second)).status).toBe(404);
  });

  it('reads more head pages while they hold only new issues, and the whole archive when five hold no known row', async () => {
    const site = archiveSite();
    await site.total();
    for (let n = 1; n <= 15; n += 1) site.fake.publish(`burst-${n}`);
    let before = site.queries.length;
    await site.refresh();
    expect(site.queries.slice(before)).toEqual([HEAD, { ...HEAD, offset: 10 }]);
    expect(await site.total()).toBe(465);
    for (let n = 1; n <= 60; n += 1) site.fake.publish(`flood-${n}`);
    before = site.queries.length;
    await site.refresh();
    expect(site.queries.slice(before, before + 5).map((query) => query.offset)).toEqual([0, 10, 20, 30, 40]);
    expect(site.queries.slice(before + 5).map((query) => query.limit)).toContain(200);
    expect(await site.total()).toBe(525);
  });

  it('lists a letter drafted long before the others and sent after them only at the next whole read: listed by creation, it lands beyond the head window', async () => {
    const site = archiveSite({ env: { ARCHIVE_RESYNC_SECONDS: '300' } });
    await site.total();
    site.fake.publish('drafted-long-ago', { createdAt: '2020-01-01T09:00:00.000Z' });
    await site.refresh();
    expect(await site.total()).toBe(450);
    for (let refreshes = 0; refreshes < 4; refreshes += 1) await site.refresh();
    expect(site.clock.now() - Date.UTC(2026, 1, 1)).toBeGreaterThan(300_000);
    expect((await site.slugs(1))[0]!.slug).toBe('drafted-long-ago');
  });

  it('lists at the next refresh a letter drafted a few letters back and sent now: listed by creation, it lands in the head window', async () => {
    const site = archiveSite();
    const [, , third] = await site.slugs(3);
    const thirdCreated = site.fake.demo.issues.find((issue) => issue.slug === third!.slug)!.createdAt;
    site.fake.publish('drafted-last-week', { createdAt: new Date(Date.parse(thirdCreated) - 1000).toISOString() });
    await site.refresh();
    expect(await site.total()).toBe(451);
    expect((await site.slugs(1))[0]!.slug).toBe('drafted-last-week');
  });

  it('sends the head page validators and takes a 304 as nothing new (If-None-Match, then If-Modified-Since)', async () => {
    for (const validators of ['etag', 'last-modified'] as const) {
      const site = archiveSite({ variant: { validators } });
      await site.total();
      await site.refresh();
      const bytes = site.fake.bytesServed()[LIST] ?? 0;
      const before = site.queries.length;
      await site.refresh();
      await site.refresh();
      expect(site.queries.slice(before)).toEqual([
        { ...HEAD, conditional: true },
        { ...HEAD, conditional: true },
      ]);
      expect(site.fake.bytesServed()[LIST]).toBe(bytes);
      site.fake.publish(`new-under-${validators}`);
      await site.refresh();
      expect(await site.total()).toBe(451);
    }
  });

  it('reads the whole archive again after ARCHIVE_RESYNC_SECONDS: an edit and an unpublished issue deep down show then', async () => {
    const site = archiveSite({ env: { ARCHIVE_RESYNC_SECONDS: '300' } });
    const deep = (await (await site.app.request('/api/issues?limit=2&offset=300')).json()) as { data: { slug: string }[] };
    const [edited, gone] = deep.data.map((row) => row.slug) as [string, string];
    expect((await site.page(gone)).status).toBe(200);
    site.fake.edit(edited, { subject: 'A corrected subject', contentHtml: '<p>Corrected</p>' });
    site.fake.unpublish(gone);
    // Head refreshes cannot see below the head: both stay as they were until the whole re-read.
    await site.refresh();
    expect(await site.total()).toBe(450);
    for (let refreshes = 0; refreshes < 4; refreshes += 1) await site.refresh();
    expect(site.clock.now() - Date.UTC(2026, 1, 1)).toBeGreaterThan(300_000);
    expect(await site.total()).toBe(449);
    expect((await site.page(gone)).status).toBe(404);
    expect(await site.page(edited)).toMatchObject({ subject: 'A corrected subject', contentHtml: '<p>Corrected</p>' });
    expect(site.fake.callsFor(BY_SLUG)).toBe(0);
  });

  it('refreshes an archive cut off at ARCHIVE_MAX_ISSUES from its head window too', async () => {
    const site = archiveSite({ env: { ARCHIVE_MAX_ISSUES: '200' } });
    expect(await site.total()).toBe(200);
    site.fake.publish('fresh-off-the-press');
    const before = site.queries.length;
    await site.refresh();
    expect(site.queries.slice(before)).toEqual([HEAD]);
    expect((await site.slugs(1))[0]!.slug).toBe('fresh-off-the-press');
  });

  it('reads the whole archive on every refresh of an upstream listing oldest sentAt first (its head holds no new issue), and finds a new issue', async () => {
    const site = archiveSite({ variant: { order: 'oldest-sent' } });
    expect(await site.total()).toBe(450);
    const cold = site.queries.length;
    await site.refresh();
    expect(site.queries.length - cold).toBe(cold);
    site.fake.publish('sent-today');
    await site.refresh();
    expect(await site.total()).toBe(451);
    expect((await site.slugs(1))[0]!.slug).toBe('sent-today');
  });
});

describe('readers of listed issues', () => {
  it('answers 40 listed issues read in a row by one client all 200, with no call by slug', async () => {
    const site = archiveSite({ archive: { issues: 450, contentBytes: 2_000 } });
    const listed = await site.slugs(40);
    const statuses = [];
    for (const { slug } of listed) statuses.push((await site.app.request(`/api/issues/${slug}`)).status);
    expect(statuses).toEqual(Array.from({ length: 40 }, () => 200));
    expect(site.fake.callsFor(BY_SLUG)).toBe(0);
  });

  it('answers 40 listed issues all 200 where each needs a call by slug (letters not kept), one call each', async () => {
    const site = archiveSite({ archive: { issues: 450, contentBytes: 20_000 }, env: { CACHE_MAX_BYTES: String(4 * 1024 * 1024) } });
    const listed = (await (await site.app.request('/api/issues?limit=40&offset=400')).json()) as { data: { slug: string }[] };
    const statuses = [];
    for (const { slug } of listed.data) statuses.push((await site.app.request(`/api/issues/${slug}`)).status);
    for (const { slug } of listed.data) statuses.push((await site.app.request(`/api/issues/${slug}`)).status);
    expect(statuses).toEqual(Array.from({ length: 80 }, () => 200));
    expect(site.fake.callsFor(BY_SLUG)).toBe(40);
  });

  it('answers a crawler reading all 450 listed issues from one address all 200, one call by slug at most per issue', async () => {
    const site = archiveSite({ archive: { issues: 450, contentBytes: 20_000 }, env: { CACHE_MAX_BYTES: String(4 * 1024 * 1024) } });
    const listed = [];
    for (let offset = 0; offset < 450; offset += 100) {
      listed.push(
        ...((await (await site.app.request(`/api/issues?limit=100&offset=${offset}`)).json()) as { data: { slug: string }[] }).data,
      );
    }
    expect(listed).toHaveLength(450);
    const statuses = new Map<number, number>();
    for (const { slug } of listed) {
      const { status } = await site.app.request(`/api/issues/${slug}`);
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
    }
    expect(Object.fromEntries(statuses)).toEqual({ 200: 450 });
    expect(site.fake.callsFor(BY_SLUG)).toBeLessThan(450);
    expect(Math.max(...listed.map(({ slug }) => site.fake.slugCalls(slug)))).toBe(1);
  });

  it('keeps a copy read by slug while the index shows the same updatedAt: no second call a TTL later', async () => {
    const site = archiveSite({ archive: { issues: 450, contentBytes: 20_000 }, env: { CACHE_MAX_BYTES: String(4 * 1024 * 1024) } });
    const listed = (await (await site.app.request('/api/issues?limit=1&offset=440')).json()) as { data: { slug: string }[] };
    const slug = listed.data[0]!.slug;
    expect((await site.app.request(`/api/issues/${slug}`)).status).toBe(200);
    await site.refresh();
    site.clock.advance(1);
    expect((await site.app.request(`/api/issues/${slug}`)).status).toBe(200);
    expect((await site.app.request(`/api/issues/${slug}`)).status).toBe(200);
    expect(site.fake.slugCalls(slug)).toBe(1);
  });

  it.each([
    { failure: 'a 500', mode: { kind: 'status-storm', statuses: [500] } as const },
    { failure: 'malformed JSON', mode: { kind: 'truncated-json' } as const },
  ])('answers $failure for a cold listed issue with 502, not a budget 503, after the client read many', async ({ mode }) => {
    const site = archiveSite({ archive: { issues: 450, contentBytes: 20_000 }, env: { CACHE_MAX_BYTES: String(4 * 1024 * 1024) } });
    const listed = (await (await site.app.request('/api/issues?limit=12&offset=430')).json()) as { data: { slug: string }[] };
    for (const { slug } of listed.data.slice(0, 11)) expect((await site.app.request(`/api/issues/${slug}`)).status).toBe(200);
    site.fake.setMode(mode);
    const response = await site.app.request(`/api/issues/${listed.data[11]!.slug}`);
    expect(response.status).toBe(502);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('UPSTREAM_ERROR');
  });
});
