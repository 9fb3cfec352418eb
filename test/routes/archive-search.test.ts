import { describe, expect, it } from 'vitest';
import type { DemoCategory, DemoIssue } from '../../src/demo/sample-publication.js';
import { createFakeUpstream } from '../support/fake-upstream/fake.js';
import { createFakeClock, createTestApp, TEST_API_KEY } from '../helpers.js';

/**
 * Search (`q`), neighbours, reading time, `updatedAt` and the page offsets of docs/contract.md
 * "GET /api/issues" and "GET /api/issues/:slug", over the one fake upstream serving a small
 * publication written for them.
 */

const LIST = 'GET /newsletter/issues';
const BY_SLUG = 'GET /newsletter/issues/by-slug/:slug';
const TTL_MS = 60_000;

interface Summary {
  slug: string;
  subject: string;
  previewText: string | null;
  sentAt: string | null;
  updatedAt: string | null;
  category: { name: string; slug: string } | null;
  readingMinutes: number | null;
}
interface Page {
  ok: true;
  data: Summary[];
  meta: { total: number; limit: number; offset: number; nextOffset: number | null; previousOffset: number | null };
}
interface Neighbour {
  slug: string;
  subject: string;
  sentAt: string | null;
}
interface Detail {
  ok: true;
  data: Summary & { readingMinutes: number; contentHtml: string | null; newer: Neighbour | null; older: Neighbour | null };
}

const category = (name: string, slug: string): DemoCategory => ({
  id: `cat_${slug}`,
  workspaceId: 'ws_test',
  accountSetId: 'as_test',
  name,
  slug,
  createdAt: '2025-01-01T00:00:00.000Z',
  updatedAt: '2025-01-01T00:00:00.000Z',
});
const KITCHEN = category('Kitchen Notes', 'kitchen');
const VISITS = category('Garden Visits', 'visits');

/** `count` words of filler that no test searches for. */
const filler = (count: number) => Array.from({ length: count }, (_, i) => `word${i % 50}`).join(' ');

/** A sent, public issue sent `day` days into 2026. */
function letter(slug: string, day: number, fields: Partial<DemoIssue> = {}): DemoIssue {
  const sentAt = new Date(Date.UTC(2026, 0, day, 9)).toISOString();
  return {
    id: `iss_${slug}`,
    slug,
    workspaceId: 'ws_test',
    accountSetId: 'as_test',
    subject: `Letter of day ${day}`,
    previewText: null,
    thumbnailUrl: null,
    contentHtml: `<p>${filler(20)}</p>`,
    contentJson: null,
    scheduledFor: null,
    audience: null,
    status: 'sent',
    isPublic: true,
    category: null,
    categories: [],
    stats: {
      newSubscriberCount: 0,
      subscriberCountTargeted: 0,
      sentCount: 0,
      deliveredCount: 0,
      openedCount: 0,
      clickedCount: 0,
      bouncedCount: 0,
      complainedCount: 0,
      failedCount: 0,
    },
    createdBy: 'usr_test',
    sentAt,
    createdAt: sentAt,
    updatedAt: sentAt,
    ...fields,
  };
}

/** The publication: newest last in this list, by day. */
function publication(): { categories: DemoCategory[]; issues: DemoIssue[] } {
  return {
    categories: [KITCHEN, VISITS],
    issues: [
      letter('garlic-in-the-subject', 1, { subject: 'Planting Garlic Before Winter', category: KITCHEN, categories: [KITCHEN] }),
      letter('garlic-in-the-preview', 2, { previewText: 'A word on garlic and its cousins.' }),
      letter('cafe-creme', 3, { subject: 'Café Crème on the Balcony', category: VISITS, categories: [VISITS] }),
      letter('entity-letter', 4, { contentHtml: '<p>We met at the caf&eacute; by the canal. It&rsquo;s lovely.</p>' }),
      letter('garlic-in-the-letter', 5, {
        contentHtml: `<h1>Notes</h1><p>${filler(40)} The winter <b>gar</b>lic went in late. <script>var tomato = 1;</script></p>`,
      }),
      letter('tomatoes-winter', 6, { subject: 'Tomatoes in Winter', previewText: 'Under glass.' }),
      letter('long-read', 7, { contentHtml: `<article><p>${filler(690)}</p></article>`, updatedAt: '2026-02-01T10:00:00.000Z' }),
      letter('no-letter', 8, { contentHtml: null, updatedAt: 'not a date' }),
      letter('a-draft-about-garlic', 9, { subject: 'Garlic draft', status: 'draft' }),
      letter('private-garlic', 10, { subject: 'Private garlic', isPublic: false }),
    ],
  };
}

function searchSite(env: Record<string, string> = {}) {
  const clock = createFakeClock(Date.UTC(2026, 2, 1));
  const fake = createFakeUpstream({
    apiKey: TEST_API_KEY,
    baseUrl: 'https://newsletter.test/v1',
    publication: publication(),
    now: clock.now,
  });
  const test = createTestApp({ fetch: fake.fetch, clock, env: { NEWSLETTER_API_BASE_URL: fake.baseUrl, ...env } });
  const page = async (query: string) => {
    const response = await test.app.request(`/api/issues?${query}`);
    expect(response.status).toBe(200);
    return (await response.json()) as Page;
  };
  const slugs = async (query: string) => (await page(query)).data.map((issue) => issue.slug);
  const issue = async (slug: string) => {
    const response = await test.app.request(`/api/issues/${slug}`);
    expect(response.status).toBe(200);
    return ((await response.json()) as Detail).data;
  };
  /** A TTL later, archive reads until one is answered from the refreshed index (bounded). */
  const refresh = async () => {
    clock.advance(TTL_MS + 1);
    for (let turn = 0; turn < 200; turn += 1) {
      const response = await test.app.request('/api/issues?limit=1');
      if (response.headers.get('x-cache') !== 'STALE') return;
      await new Promise((resolve) => setTimeout(resolve, 0));
    }
    throw new Error('the archive was not refreshed');
  };
  return { ...test, fake, page, slugs, issue, refresh };
}

describe('GET /api/issues?q= searches the archive', () => {
  it('ranks subject matches first, then preview and letter matches newest first, and never shows a draft or private issue', async () => {
    const { slugs } = searchSite();
    expect(await slugs('q=garlic')).toEqual(['garlic-in-the-subject', 'garlic-in-the-letter', 'garlic-in-the-preview']);
  });

  it('ignores case and accents, in the query and in the letter (`caf&eacute;` too)', async () => {
    const { slugs } = searchSite();
    expect(await slugs('q=cafe')).toEqual(['cafe-creme', 'entity-letter']);
    expect(await slugs(`q=${encodeURIComponent('CAFÉ crème')}`)).toEqual(['cafe-creme']);
    expect(await slugs(`q=${encodeURIComponent('Crème')}`)).toEqual(['cafe-creme']);
  });

  it('needs every word to match, each the start of a word of the issue', async () => {
    const { slugs } = searchSite();
    expect(await slugs('q=garlic+winter')).toEqual(['garlic-in-the-subject', 'garlic-in-the-letter']);
    expect(await slugs('q=winter+garlic')).toEqual(['garlic-in-the-subject', 'garlic-in-the-letter']);
    // `tomat` starts "Tomatoes"; the `tomato` of the letter's script is not text.
    expect(await slugs('q=tomat')).toEqual(['tomatoes-winter']);
    expect(await slugs('q=omatoes')).toEqual([]);
    expect(await slugs('q=garlic+nowhere')).toEqual([]);
    // An apostrophe inside a word is part of it.
    expect(await slugs('q=its+lovely')).toEqual(['entity-letter']);
  });

  it('searches the category name, and combines with ?category=', async () => {
    const { slugs } = searchSite();
    expect(await slugs('q=kitchen+notes')).toEqual(['garlic-in-the-subject']);
    expect(await slugs('q=garlic&category=kitchen')).toEqual(['garlic-in-the-subject']);
    expect(await slugs('q=garlic&category=visits')).toEqual([]);
  });

  it('pages through the matches with limit and offset, meta.total counting the matches', async () => {
    const { page } = searchSite();
    const first = await page('q=garlic&limit=2');
    expect(first.data.map((issue) => issue.slug)).toEqual(['garlic-in-the-subject', 'garlic-in-the-letter']);
    expect(first.meta).toEqual({ total: 3, limit: 2, offset: 0, nextOffset: 2, previousOffset: null });
    const second = await page('q=garlic&limit=2&offset=2');
    expect(second.data.map((issue) => issue.slug)).toEqual(['garlic-in-the-preview']);
    expect(second.meta).toEqual({ total: 3, limit: 2, offset: 2, nextOffset: null, previousOffset: 0 });
  });

  it('answers an empty q, or one without a letter or digit, with the whole archive: the same body and ETag', async () => {
    const { app } = searchSite();
    const whole = await app.request('/api/issues');
    const body = await whole.text();
    for (const q of ['', '%20%20', '!!!', '%E2%80%94']) {
      const response = await app.request(`/api/issues?q=${q}`);
      expect(response.status).toBe(200);
      expect(await response.text()).toBe(body);
      expect(response.headers.get('etag')).toBe(whole.headers.get('etag'));
    }
    expect((JSON.parse(body) as Page).meta.total).toBe(8);
  });

  it('accepts q of 200 characters, even where each is two UTF-16 units', async () => {
    const { app } = searchSite();
    expect((await app.request(`/api/issues?q=${'a'.repeat(200)}`)).status).toBe(200);
    expect((await app.request(`/api/issues?q=${encodeURIComponent('🌱'.repeat(200))}`)).status).toBe(200);
  });

  it('returns 422 VALIDATION_ERROR for q of 201 characters, and makes no upstream call', async () => {
    const { app, fake } = searchSite();
    for (const q of ['a'.repeat(201), `${'garlic '.repeat(28)}garlic`.slice(0, 201), '🌱'.repeat(201)]) {
      const response = await app.request(`/api/issues?q=${encodeURIComponent(q)}`);
      expect(response.status).toBe(422);
      expect(response.headers.get('cache-control')).toBe('no-store');
      const body = (await response.json()) as { ok: false; error: { code: string; details: { path: string; message: string }[] } };
      expect(body.error.code).toBe('VALIDATION_ERROR');
      expect(body.error.details).toEqual([{ path: 'q', message: 'q must be at most 200 characters' }]);
    }
    expect(fake.counts()).toEqual({ unknownSlugCalls: 0 });
  });

  it('makes no upstream call for a search: every one is answered from the cached archive index', async () => {
    const { app, fake } = searchSite();
    expect((await app.request('/api/issues')).status).toBe(200);
    const calls = fake.counts();
    for (const q of ['garlic', 'cafe', 'winter garlic', 'nothing at all', 'tomat']) {
      const response = await app.request(`/api/issues?q=${encodeURIComponent(q)}`);
      expect(response.status).toBe(200);
      expect(response.headers.get('x-cache')).toBe('HIT');
    }
    expect(fake.counts()).toEqual(calls);
  });

  it('keeps no page per query: 5,000 different searches leave the caches as they were', async () => {
    const { app, stats, fake } = searchSite();
    expect((await app.request('/api/issues?q=garlic')).status).toBe(200);
    const before = stats();
    const calls = fake.counts();
    for (let i = 0; i < 5_000; i += 1) {
      const response = await app.request(`/api/issues?q=garlic+${i.toString(36)}${'x'.repeat(i % 60)}&limit=${1 + (i % 100)}`);
      expect(response.status).toBe(200);
    }
    const after = stats();
    expect(after.renderedPages).toBe(before.renderedPages);
    expect(after.renderedPageBytes).toBe(before.renderedPageBytes);
    expect(after.entries).toBe(before.entries);
    expect(after.bytes).toBe(before.bytes);
    expect(fake.counts()).toEqual(calls);
  }, 60_000);

  it('finds a letter published since once the archive is refreshed, and drops one unpublished', async () => {
    const { slugs, fake, refresh } = searchSite();
    expect(await slugs('q=garlic')).toHaveLength(3);
    fake.publish('fresh-garlic');
    fake.edit('fresh-garlic', { subject: 'Fresh Garlic Scapes', contentHtml: '<p>Scapes in June.</p>' });
    fake.unpublish('garlic-in-the-preview');
    await refresh();
    expect(await slugs('q=garlic')).toEqual(['fresh-garlic', 'garlic-in-the-subject', 'garlic-in-the-letter']);
    expect(await slugs('q=scapes+june')).toEqual(['fresh-garlic']);
  });

  it('serves a search as Atom with only the matching entries, linked to itself with q', async () => {
    const { app } = searchSite({ SITE_ISSUE_URL: 'https://news.example.com/issues/{slug}', PUBLIC_BASE_URL: 'https://api.example.com' });
    const response = await app.request('/api/issues?format=atom&q=Garlic+WINTER');
    expect(response.status).toBe(200);
    const xml = await response.text();
    expect([...xml.matchAll(/<id>https:\/\/news\.example\.com\/issues\/([^<]+)<\/id>/g)].map((match) => match[1])).toEqual([
      'garlic-in-the-subject',
      'garlic-in-the-letter',
    ]);
    expect(xml).toContain(
      '<link rel="self" type="application/atom+xml" href="https://api.example.com/api/issues?format=atom&amp;q=garlic+winter"/>',
    );
  });
});

describe('issue summaries and pages: updatedAt and reading time', () => {
  it('gives each summary its updatedAt as an ISO date (null when the upstream says nothing usable), and its reading time', async () => {
    const { page } = searchSite();
    const { data } = await page('limit=100');
    const bySlug = new Map(data.map((issue) => [issue.slug, issue]));
    expect(bySlug.get('long-read')).toMatchObject({ updatedAt: '2026-02-01T10:00:00.000Z', readingMinutes: 3 });
    expect(bySlug.get('tomatoes-winter')).toMatchObject({ updatedAt: '2026-01-06T09:00:00.000Z', readingMinutes: 1 });
    expect(bySlug.get('no-letter')).toMatchObject({ updatedAt: null, readingMinutes: null });
  });

  it('reads about 230 words a minute, rounded, and at least a minute on an issue page', async () => {
    const { issue } = searchSite();
    expect((await issue('long-read')).readingMinutes).toBe(3);
    expect((await issue('tomatoes-winter')).readingMinutes).toBe(1);
    expect((await issue('no-letter')).readingMinutes).toBe(1);
  });
});

describe('GET /api/issues/:slug: newer and older', () => {
  const neighbour = (slug: string, subject: string, day: number) => ({
    slug,
    subject,
    sentAt: new Date(Date.UTC(2026, 0, day, 9)).toISOString(),
  });

  it('names the neighbouring public issues in archive order, null at both ends, skipping drafts and private issues', async () => {
    const { issue } = searchSite();
    const newest = await issue('no-letter');
    expect(newest.newer).toBeNull();
    expect(newest.older).toEqual(neighbour('long-read', 'Letter of day 7', 7));
    const oldest = await issue('garlic-in-the-subject');
    expect(oldest.newer).toEqual(neighbour('garlic-in-the-preview', 'Letter of day 2', 2));
    expect(oldest.older).toBeNull();
    const middle = await issue('cafe-creme');
    expect(middle.newer).toEqual(neighbour('entity-letter', 'Letter of day 4', 4));
    expect(middle.older).toEqual(neighbour('garlic-in-the-preview', 'Letter of day 2', 2));
  });

  it('follows a newly published issue without reading the unchanged letter again', async () => {
    const { issue, fake, refresh, app } = searchSite();
    expect((await app.request('/api/issues')).status).toBe(200);
    expect((await issue('no-letter')).newer).toBeNull();
    const bySlug = fake.callsFor(BY_SLUG);
    const published = fake.publish('brand-new');
    await refresh();
    // The copy of the issue is refreshed in its turn: stale once, then rendered with its new neighbour.
    for (let turn = 0; turn < 50 && (await issue('no-letter')).newer === null; turn += 1)
      await new Promise((resolve) => setTimeout(resolve, 0));
    expect((await issue('no-letter')).newer).toEqual({ slug: 'brand-new', subject: published.subject, sentAt: published.sentAt });
    expect(fake.callsFor(BY_SLUG)).toBe(bySlug);
    expect((await issue('brand-new')).newer).toBeNull();
  });

  it('reads the archive once for neighbours when an issue is the first thing asked for', async () => {
    const { issue, fake, app } = searchSite();
    expect((await issue('cafe-creme')).older?.slug).toBe('garlic-in-the-preview');
    const listCalls = fake.callsFor(LIST);
    expect(listCalls).toBeGreaterThan(0);
    expect((await issue('entity-letter')).newer?.slug).toBe('garlic-in-the-letter');
    expect((await app.request('/api/issues?q=cafe')).status).toBe(200);
    expect(fake.callsFor(LIST)).toBe(listCalls);
  });
});
