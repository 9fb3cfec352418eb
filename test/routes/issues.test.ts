import { describe, expect, it } from 'vitest';
import { DEMO_ACCOUNT_SET_ID, DEMO_WORKSPACE_ID } from '../../src/demo/sample-publication.js';
import { createDemoUpstream } from '../../src/demo/upstream.js';
import type { ErrorBody } from '../../src/core/http/errors.js';
import {
  IssueDetailSchema,
  IssueSummarySchema,
  type ArchivePageBody,
  type IssueBody,
  type IssueSummary,
} from '../../src/core/public-shapes.js';
import { SLUG_PATTERN } from '../../src/core/slug.js';
import { TEST_API_KEY, TEST_BASE_URL, createScriptedFetch, createTestApp, jsonResponse, type FetchHandler } from '../helpers.js';

// The keys come from the schemas (src/core/public-shapes.ts): a field added there is expected here.
const SUMMARY_KEYS = Object.keys(IssueSummarySchema.shape).sort();
const DETAIL_KEYS = Object.keys(IssueDetailSchema.shape).sort();
const INTERNAL_KEYS = [
  'stats',
  'audience',
  'createdBy',
  'workspaceId',
  'accountSetId',
  'contentJson',
  'scheduledFor',
  'id',
  'status',
  'isPublic',
  'categories',
  'createdAt',
];

/** The real app over the demo upstream, with the demo's traffic recorded in a call log. */
function createDemoApp(env: Record<string, string> = {}) {
  const demo = createDemoUpstream({ apiKey: TEST_API_KEY });
  const upstream = createScriptedFetch((call) => demo.fetch(call.url, { method: call.method, headers: call.headers }));
  const test = createTestApp({ fetch: upstream.fetch, env: { NEWSLETTER_API_BASE_URL: demo.baseUrl, ...env } });
  return { ...test, demo, calls: upstream.calls };
}

/** The real app over a scripted upstream. */
function createScriptedApp(handler: FetchHandler, env: Record<string, string> = {}) {
  const upstream = createScriptedFetch(handler);
  const test = createTestApp({ fetch: upstream.fetch, env });
  return { ...test, calls: upstream.calls };
}

/** Every object key anywhere in a parsed JSON value. */
function collectKeys(value: unknown, keys = new Set<string>()): Set<string> {
  if (Array.isArray(value)) {
    for (const item of value) collectKeys(item, keys);
  } else if (value !== null && typeof value === 'object') {
    for (const [key, child] of Object.entries(value)) {
      keys.add(key);
      collectKeys(child, keys);
    }
  }
  return keys;
}

function expectErrorResponse(res: Response, status: number) {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  expect(res.headers.get('cache-control')).toBe('no-store');
}

/** What a public page must show of the demo, worked out from the sample itself: sent, public, valid slug. */
function expectedDemoSlugs(demo: ReturnType<typeof createDemoUpstream>): string[] {
  return demo.issues
    .filter(
      (issue) => issue.status === 'sent' && issue.isPublic === true && typeof issue.slug === 'string' && SLUG_PATTERN.test(issue.slug),
    )
    .sort((a, b) => Date.parse(b.sentAt ?? '') - Date.parse(a.sentAt ?? '') || ((a.slug ?? '') < (b.slug ?? '') ? -1 : 1))
    .map((issue) => issue.slug as string);
}

const HOUR_MS = 60 * 60 * 1000;
const NEWEST_SENT_MS = Date.UTC(2026, 0, 1, 9, 0, 0);

/**
 * An upstream issue record with every internal field the real service stores. Issues come in
 * pairs sharing one `sentAt`, so the expected order (newest first, ties by slug) is simply n ascending.
 */
function upstreamIssue(n: number, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const categorySlug = n % 3 === 0 ? 'alpha' : n % 3 === 1 ? 'beta' : null;
  const category =
    categorySlug === null
      ? null
      : {
          id: `cat_internal_${categorySlug}`,
          workspaceId: 'ws_internal_9q8w',
          accountSetId: 'acct-set-internal-5e6f',
          name: categorySlug === 'alpha' ? 'Alpha' : 'Beta',
          slug: categorySlug,
          createdAt: '2025-01-01T00:00:00.000Z',
          updatedAt: '2025-01-01T00:00:00.000Z',
        };
  return {
    id: `iss_internal_${n}`,
    slug: `issue-${String(n).padStart(3, '0')}`,
    workspaceId: 'ws_internal_9q8w',
    accountSetId: 'acct-set-internal-5e6f',
    subject: `Issue ${n}`,
    previewText: `Preview ${n}`,
    thumbnailUrl: null,
    contentHtml: `<p>Issue ${n}</p>`,
    contentJson: { type: 'doc', internalNote: 'editor-only-content' },
    scheduledFor: null,
    audience: { segment: 'internal-segment' },
    status: 'sent',
    isPublic: true,
    category,
    categories: category === null ? [] : [category],
    stats: { openedCount: 4242, clickedCount: 4141 },
    createdBy: 'user_internal_editor',
    sentAt: new Date(NEWEST_SENT_MS - Math.floor(n / 2) * HOUR_MS).toISOString(),
    createdAt: '2025-12-01T00:00:00.000Z',
    updatedAt: '2025-12-01T00:00:00.000Z',
    ...extra,
  };
}

/** A fake List Issues that honours limit and offset over fixed rows (not in send order). */
function listIssuesHandler(rows: readonly Record<string, unknown>[]): FetchHandler {
  return (call) => {
    if (call.url.pathname !== '/v1/newsletter/issues') {
      return jsonResponse({ ok: false, error: { code: 'NOT_FOUND', message: 'no such operation' } }, 404);
    }
    const limit = Number(call.url.searchParams.get('limit') ?? '50');
    const offset = Number(call.url.searchParams.get('offset') ?? '0');
    return jsonResponse({ ok: true, data: rows.slice(offset, offset + limit) });
  };
}

/** A deterministic permutation of 0..count-1, so the upstream's order is never the send order. */
function scrambled(count: number): number[] {
  return Array.from({ length: count }, (_, i) => (i * 97) % count);
}

async function getList(app: ReturnType<typeof createTestApp>['app'], path: string): Promise<{ res: Response; body: ArchivePageBody }> {
  const res = await app.request(path);
  return { res, body: (await res.json()) as ArchivePageBody };
}

describe('GET /api/issues over the demo upstream', () => {
  it('returns the first 20 public issues with meta.total counting every sent, public issue with a valid slug', async () => {
    const { app, demo } = createDemoApp();
    const { res, body } = await getList(app, '/api/issues');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(body.ok).toBe(true);
    expect(body.meta).toEqual({ total: 48, limit: 20, offset: 0, nextOffset: 20, previousOffset: null });
    expect(expectedDemoSlugs(demo)).toHaveLength(48);
    expect(body.data.map((issue) => issue.slug)).toEqual(expectedDemoSlugs(demo).slice(0, 20));
  });

  it('lists the newest sentAt first and breaks a tie between two issues sent together by slug', async () => {
    const { app } = createDemoApp();
    const { body } = await getList(app, '/api/issues?limit=100');
    const slugs = body.data.map((issue) => issue.slug);
    expect(slugs).toHaveLength(48);
    expect(slugs[0]).toBe('planning-next-years-plot');
    for (let i = 1; i < body.data.length; i += 1) {
      const previous = body.data[i - 1]!;
      const current = body.data[i]!;
      const previousTime = Date.parse(previous.sentAt!);
      const currentTime = Date.parse(current.sentAt!);
      expect(previousTime).toBeGreaterThanOrEqual(currentTime);
      if (previousTime === currentTime) expect(previous.slug < current.slug).toBe(true);
    }
    const bonus = slugs.indexOf('bonus-edition-five-salads-from-the-plot');
    expect(slugs[bonus + 1]).toBe('midsummer-harvest-suppers');
    expect(body.data[bonus]!.sentAt).toBe(body.data[bonus + 1]!.sentAt);
  });

  it('pages with limit and offset without overlap, and the pages together cover the whole archive', async () => {
    const { app } = createDemoApp();
    const { body: whole } = await getList(app, '/api/issues?limit=100');
    const paged: string[] = [];
    for (let offset = 0; offset < 48; offset += 7) {
      const { res, body } = await getList(app, `/api/issues?limit=7&offset=${offset}`);
      expect(res.status).toBe(200);
      expect(body.meta).toEqual({
        total: 48,
        limit: 7,
        offset,
        nextOffset: offset + 7 < 48 ? offset + 7 : null,
        previousOffset: offset === 0 ? null : offset - 7,
      });
      expect(body.data.length).toBe(Math.min(7, 48 - offset));
      paged.push(...body.data.map((issue) => issue.slug));
    }
    expect(new Set(paged).size).toBe(paged.length);
    expect(paged).toEqual(whole.data.map((issue) => issue.slug));
  });

  it('returns an empty page with the full total for an offset past the end', async () => {
    const { app } = createDemoApp();
    const { res, body } = await getList(app, '/api/issues?offset=48');
    expect(res.status).toBe(200);
    expect(body.data).toEqual([]);
    expect(body.meta).toEqual({ total: 48, limit: 20, offset: 48, nextOffset: null, previousOffset: 28 });
  });

  it('filters by category and counts only that category in meta.total', async () => {
    const { app } = createDemoApp();
    const { body: whole } = await getList(app, '/api/issues?limit=100');
    const { res, body } = await getList(app, '/api/issues?category=interviews&limit=100');
    expect(res.status).toBe(200);
    expect(body.meta).toEqual({ total: 9, limit: 100, offset: 0, nextOffset: null, previousOffset: null });
    expect(body.data.every((issue) => issue.category?.slug === 'interviews')).toBe(true);
    expect(body.data.map((issue) => issue.slug)).toEqual(
      whole.data.filter((issue) => issue.category?.slug === 'interviews').map((issue) => issue.slug),
    );

    const { body: page } = await getList(app, '/api/issues?category=interviews&limit=4&offset=4');
    expect(page.meta).toEqual({ total: 9, limit: 4, offset: 4, nextOffset: 8, previousOffset: 0 });
    expect(page.data.map((issue) => issue.slug)).toEqual(body.data.slice(4, 8).map((issue) => issue.slug));
  });

  it('returns an empty list with total 0 for an unknown category', async () => {
    const { app } = createDemoApp();
    const { res, body } = await getList(app, '/api/issues?category=no-such-category');
    expect(res.status).toBe(200);
    expect(body).toEqual({ ok: true, data: [], meta: { total: 0, limit: 20, offset: 0, nextOffset: null, previousOffset: null } });
  });

  it('ignores unknown query parameters: same body and same ETag as without them', async () => {
    const { app, calls } = createDemoApp();
    const plain = await app.request('/api/issues?limit=5');
    const decorated = await app.request('/api/issues?utm_source=newsletter&limit=5&fields=stats,workspaceId&debug=1');
    expect(decorated.status).toBe(200);
    expect(await decorated.text()).toBe(await plain.text());
    expect(decorated.headers.get('etag')).toBe(plain.headers.get('etag'));
    // One archive load: its short page, then the empty page that proves the end.
    expect(calls).toHaveLength(2);
  });

  it('accepts the boundary values limit=1, limit=100 and offset=5000', async () => {
    const { app } = createDemoApp();
    const one = await getList(app, '/api/issues?limit=1');
    expect(one.res.status).toBe(200);
    expect(one.body.data).toHaveLength(1);
    const hundred = await getList(app, '/api/issues?limit=100');
    expect(hundred.res.status).toBe(200);
    expect(hundred.body.meta.limit).toBe(100);
    const farOffset = await getList(app, '/api/issues?offset=5000');
    expect(farOffset.res.status).toBe(200);
    // Past the end, the page before is the last one that holds issues.
    expect(farOffset.body.meta).toEqual({ total: 48, limit: 20, offset: 5000, nextOffset: null, previousOffset: 28 });
  });
});

describe('GET /api/issues with an invalid query', () => {
  const invalidQueries: [query: string, path: string][] = [
    ['limit=0', 'limit'],
    ['limit=101', 'limit'],
    ['limit=-1', 'limit'],
    ['limit=1.5', 'limit'],
    ['limit=abc', 'limit'],
    ['limit=1e1', 'limit'],
    ['limit=%205', 'limit'],
    ['offset=-1', 'offset'],
    ['offset=5001', 'offset'],
    ['offset=1e3', 'offset'],
    ['category=a.b', 'category'],
    ['category=a%2Fb', 'category'],
    ['category=..%2F..%2Fsubscribers', 'category'],
    ['category=a%20b', 'category'],
    ['category=-leading', 'category'],
    [`category=${'c'.repeat(201)}`, 'category'],
  ];

  it.each(invalidQueries)('returns 422 VALIDATION_ERROR and makes no upstream call for ?%s', async (query, path) => {
    const { app, calls } = createScriptedApp(listIssuesHandler([upstreamIssue(0)]));
    const res = await app.request(`/api/issues?${query}`);
    expectErrorResponse(res, 422);
    const body = (await res.json()) as ErrorBody;
    expect(body.ok).toBe(false);
    expect(body.error.code).toBe('VALIDATION_ERROR');
    expect(body.error.details).toEqual([{ path, message: expect.any(String) }]);
    expect(calls).toHaveLength(0);
  });

  it('names every invalid parameter in details at once', async () => {
    const { app, calls } = createScriptedApp(listIssuesHandler([]));
    const res = await app.request('/api/issues?limit=0&offset=-1&category=a.b');
    expectErrorResponse(res, 422);
    const body = (await res.json()) as ErrorBody;
    expect(body.error.details?.map((detail) => detail.path).sort()).toEqual(['category', 'limit', 'offset']);
    expect(calls).toHaveLength(0);
  });

  it('caps offset at ARCHIVE_MAX_ISSUES when it is configured lower', async () => {
    const { app, calls } = createScriptedApp(listIssuesHandler([upstreamIssue(0)]), { ARCHIVE_MAX_ISSUES: '300' });
    expectErrorResponse(await app.request('/api/issues?offset=301'), 422);
    expect(calls).toHaveLength(0);
    expect((await app.request('/api/issues?offset=300')).status).toBe(200);
  });

  it('does not echo the rejected value back in the error', async () => {
    const { app } = createScriptedApp(listIssuesHandler([]));
    const res = await app.request('/api/issues?category=%3Cscript%3Ealert(1)%3C%2Fscript%3E');
    expectErrorResponse(res, 422);
    expect(await res.text()).not.toContain('<script>');
  });
});

describe('GET /api/issues over an archive larger than one upstream page', () => {
  const TOTAL = 230;
  const rows = scrambled(TOTAL).map((n) => upstreamIssue(n));
  const expectedSlugs = Array.from({ length: TOTAL }, (_, n) => `issue-${String(n).padStart(3, '0')}`);
  const expectedByCategory: Record<string, string[]> = {
    alpha: expectedSlugs.filter((_, n) => n % 3 === 0),
    beta: expectedSlugs.filter((_, n) => n % 3 === 1),
  };

  it('reads the archive in three upstream calls (200, 30, empty), then serves 100 different pages and filters without calling again', async () => {
    const { app, calls } = createScriptedApp(listIssuesHandler(rows));

    const { res, body } = await getList(app, '/api/issues?offset=210');
    expect(res.status).toBe(200);
    expect(body.meta).toEqual({ total: TOTAL, limit: 20, offset: 210, nextOffset: null, previousOffset: 190 });
    expect(body.data.map((issue) => issue.slug)).toEqual(expectedSlugs.slice(210, 230));

    expect(calls).toHaveLength(3);
    for (const [index, call] of calls.entries()) {
      expect(call.method).toBe('GET');
      expect(`${call.url.origin}${call.url.pathname}`).toBe(`${TEST_BASE_URL}/newsletter/issues`);
      expect(call.url.searchParams.get('status')).toBe('sent');
      expect(call.url.searchParams.get('isPublic')).toBe('true');
      expect(call.url.searchParams.get('limit')).toBe('200');
      expect(call.url.searchParams.get('offset')).toBe(String([0, 200, TOTAL][index]));
    }

    const categories = [undefined, 'alpha', 'beta', 'no-such-category'] as const;
    const paths = new Set<string>(['/api/issues?offset=210']);
    for (let i = 0; i < 100; i += 1) {
      const limit = 1 + ((i * 37) % 100);
      const offset = (i * 53) % 240;
      const category = categories[i % categories.length];
      const path = `/api/issues?limit=${limit}&offset=${offset}${category ? `&category=${category}` : ''}`;
      paths.add(path);

      const page = await getList(app, path);
      const list = category === undefined ? expectedSlugs : (expectedByCategory[category] ?? []);
      expect(page.res.status).toBe(200);
      expect(page.body.meta).toMatchObject({ total: list.length, limit, offset });
      // The next page starts right after this one while issues remain; the one before ends where this one starts (or the list ends).
      expect(page.body.meta.nextOffset).toBe(offset + limit < list.length ? offset + limit : null);
      expect(page.body.meta.previousOffset).toBe(offset === 0 ? null : Math.max(0, Math.min(offset, list.length) - limit));
      expect(page.body.data.map((issue) => issue.slug)).toEqual(list.slice(offset, offset + limit));
    }
    expect(paths.size).toBe(101);
    expect(calls).toHaveLength(3);
  });

  it('stops paging when a full page adds no new issue (an upstream that ignores offset)', async () => {
    const firstPage = scrambled(200).map((n) => upstreamIssue(n));
    const { app, calls } = createScriptedApp(() => jsonResponse({ ok: true, data: firstPage }));
    const { res, body } = await getList(app, '/api/issues');
    expect(res.status).toBe(200);
    expect(body.meta.total).toBe(200);
    expect(calls).toHaveLength(2);
  });
});

describe('GET /api/issues over a leaky upstream', () => {
  it('shows only sent, public issues with a valid slug, whatever the upstream returns', async () => {
    const leaky = [
      upstreamIssue(5, { slug: 'draft-issue', status: 'draft' }),
      upstreamIssue(0, { slug: 'good-newest' }),
      upstreamIssue(6, { slug: 'private-issue', isPublic: false }),
      upstreamIssue(7, { slug: 'visibility-unknown', isPublic: undefined }),
      upstreamIssue(8, { slug: 'visibility-null', isPublic: null }),
      upstreamIssue(9, { slug: 'failed-issue', status: 'failed' }),
      upstreamIssue(1, { slug: 'sending-issue', status: 'sending', sentAt: '2030-01-01T00:00:00.000Z' }),
      upstreamIssue(10, { slug: null }),
      upstreamIssue(11, { slug: '' }),
      upstreamIssue(12, { slug: '../admin' }),
      upstreamIssue(13, { slug: 'has space' }),
      upstreamIssue(14, { slug: '-dash-first' }),
      upstreamIssue(15, { slug: 'dotted.slug' }),
      upstreamIssue(16, { slug: 'x'.repeat(201) }),
      upstreamIssue(17, { slug: 'archived-issue', status: 'archived' }),
      upstreamIssue(4, { slug: 'good-older' }),
    ];
    const { app } = createScriptedApp(listIssuesHandler(leaky));
    const res = await app.request('/api/issues?limit=100');
    expect(res.status).toBe(200);
    const text = await res.text();
    const body = JSON.parse(text) as ArchivePageBody;
    expect(body.data.map((issue) => issue.slug)).toEqual(['good-newest', 'good-older']);
    expect(body.meta.total).toBe(2);
    for (const hidden of [
      'draft-issue',
      'private-issue',
      'visibility-',
      'failed-issue',
      'sending-issue',
      'archived-issue',
      '../admin',
      'has space',
      'dotted.slug',
      'Issue 10',
      'Issue 11',
    ]) {
      expect(text).not.toContain(hidden);
    }
  });

  it('shows one issue once when the upstream repeats a row across pages', async () => {
    const rows = [...scrambled(200).map((n) => upstreamIssue(n)), upstreamIssue(3), upstreamIssue(200)];
    const { app } = createScriptedApp(listIssuesHandler(rows));
    const { body } = await getList(app, '/api/issues?limit=100&offset=0');
    expect(body.meta.total).toBe(201);
    const slugs = body.data.map((issue) => issue.slug);
    expect(new Set(slugs).size).toBe(slugs.length);
  });
});

describe('GET /api/issues/:slug', () => {
  it('returns a known issue with its contentHtml after one upstream call by slug, and reads the archive once for its neighbours', async () => {
    const { app, calls, demo } = createDemoApp();
    const res = await app.request('/api/issues/the-winter-seed-swap-at-hollis-library');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const body = (await res.json()) as IssueBody;
    const source = demo.issues.find((issue) => issue.slug === 'the-winter-seed-swap-at-hollis-library')!;
    const { body: archive } = await getList(app, '/api/issues?limit=100');
    const at = archive.data.findIndex((issue) => issue.slug === source.slug);
    const neighbour = (issue: IssueSummary | undefined) => issue && { slug: issue.slug, subject: issue.subject, sentAt: issue.sentAt };
    expect(body).toEqual({
      ok: true,
      data: {
        slug: 'the-winter-seed-swap-at-hollis-library',
        subject: 'The Winter Seed Swap at Hollis Library',
        previewText: 'Bring an envelope, leave with a summer.',
        thumbnailUrl: 'http://127.0.0.1:8787/thumbnails/the-winter-seed-swap-at-hollis-library.svg',
        sentAt: '2026-01-25T09:00:00.000Z',
        updatedAt: new Date(source.updatedAt).toISOString(),
        category: { name: 'Community', slug: 'community' },
        readingMinutes: expect.any(Number),
        contentHtml: source.contentHtml,
        newer: neighbour(archive.data[at - 1]),
        older: neighbour(archive.data[at + 1]),
      },
    });
    expect(at).toBeGreaterThan(0);
    expect(body.data.readingMinutes).toBeGreaterThanOrEqual(1);
    expect(body.data.contentHtml).toMatch(/^<h1>/);
    expect(calls[0]!.method).toBe('GET');
    expect(calls[0]!.url.pathname).toBe('/v1/newsletter/issues/by-slug/the-winter-seed-swap-at-hollis-library');
    expect(calls[0]!.headers.get('authorization')).toBe(`Bearer ${TEST_API_KEY}`);
    // Then the archive, once (its page and the empty page after it), which the list above was served from.
    expect(calls.slice(1).map((call) => call.url.pathname)).toEqual(['/v1/newsletter/issues', '/v1/newsletter/issues']);
  });

  it('returns 404 NOT_FOUND for an unknown slug', async () => {
    const { app, calls } = createDemoApp();
    const res = await app.request('/api/issues/no-such-issue');
    expectErrorResponse(res, 404);
    const body = (await res.json()) as ErrorBody;
    expect(body).toEqual({ ok: false, error: { code: 'NOT_FOUND', message: expect.any(String) } });
    expect(body.error.message).not.toContain('Issue not found');
    expect(calls).toHaveLength(1);
  });

  it('returns 404 NOT_FOUND for a slug the demo keeps as a draft or members-only issue', async () => {
    const { app } = createDemoApp();
    for (const slug of ['winter-squash-varieties-compared', 'members-only-harvest-report', 'sending-right-now']) {
      const res = await app.request(`/api/issues/${slug}`);
      expectErrorResponse(res, 404);
      expect(((await res.json()) as ErrorBody).error.code).toBe('NOT_FOUND');
    }
  });

  it('accepts a 200-character slug and asks the upstream for it', async () => {
    const { app, calls } = createDemoApp();
    const slug = `a${'b'.repeat(198)}c`;
    const res = await app.request(`/api/issues/${slug}`);
    expectErrorResponse(res, 404);
    expect(calls).toHaveLength(1);
    expect(calls[0]!.url.pathname).toBe(`/v1/newsletter/issues/by-slug/${slug}`);
  });

  const hostileSlugs: [label: string, path: string][] = [
    ['an encoded path traversal', '..%2F..%2Fsubscribers'],
    ['an encoded traversal inside one segment', '%2e%2e%2Fsubscribers'],
    ['an encoded slash', 'a%2Fb'],
    ['a dotted slug', 'a.b'],
    ['a trailing dot-dot', 'a%2e%2e'],
    ['an encoded backslash', 'a%5Cb'],
    ['an encoded NUL byte', 'a%00b'],
    ['a double-encoded dot-dot', '%252e%252e'],
    ['a double-encoded slash', 'a%252Fb'],
    ['an encoded space', 'a%20b'],
    ['a leading hyphen', '-leading'],
    ['a trailing hyphen', 'trailing-'],
    ['a 201-character slug', `a${'b'.repeat(199)}c`],
    ['a non-ASCII letter', 'ä'],
    ['an encoded non-ASCII letter', '%C3%A4'],
    ['a query-like slug', 'a%3Fb%3Dc'],
  ];

  it.each(hostileSlugs)('returns 422 and makes no upstream call for %s', async (_label, slug) => {
    const { app, calls } = createDemoApp();
    const res = await app.request(`/api/issues/${slug}`);
    expectErrorResponse(res, 422);
    const body = (await res.json()) as ErrorBody;
    expect(body.error.code).toBe('VALIDATION_ERROR');
    expect(body.error.details).toEqual([{ path: 'slug', message: expect.any(String) }]);
    expect(calls).toHaveLength(0);
  });

  it('never reaches the upstream for an encoded dot-dot segment, which the URL parser resolves away (JSON 404)', async () => {
    // WHATWG URL parsing turns /api/issues/%2e%2e into /api/ before any router sees it.
    const { app, calls } = createDemoApp();
    const res = await app.request('/api/issues/%2e%2e');
    expectErrorResponse(res, 404);
    expect(((await res.json()) as ErrorBody).error.code).toBe('NOT_FOUND');
    expect(calls).toHaveLength(0);
  });

  it('answers a raw slash in the slug as another route: a JSON 404 with no upstream call', async () => {
    const { app, calls } = createDemoApp();
    const res = await app.request('/api/issues/a/b');
    expectErrorResponse(res, 404);
    expect(((await res.json()) as ErrorBody).error.code).toBe('NOT_FOUND');
    expect(calls).toHaveLength(0);
  });
});

describe('GET /api/issues/:slug over a leaky upstream', () => {
  const leakyCases: [label: string, extra: Record<string, unknown>][] = [
    ['a draft', { status: 'draft' }],
    ['a private issue', { isPublic: false }],
    ['an issue without a visibility flag', { isPublic: undefined }],
    ['an issue still sending', { status: 'sending' }],
    ['a failed issue', { status: 'failed' }],
    ['an issue under another slug', { slug: 'some-other-slug' }],
  ];

  it.each(leakyCases)('returns 404 NOT_FOUND when the upstream answers with %s', async (_label, extra) => {
    const { app, calls } = createScriptedApp(() => jsonResponse({ ok: true, data: upstreamIssue(1, { slug: 'wanted', ...extra }) }));
    const res = await app.request('/api/issues/wanted');
    expectErrorResponse(res, 404);
    const text = await res.text();
    expect((JSON.parse(text) as ErrorBody).error.code).toBe('NOT_FOUND');
    expect(text).not.toContain('Issue 1');
    expect(calls).toHaveLength(1);
    expect(calls[0]!.url.pathname).toBe('/v1/newsletter/issues/by-slug/wanted');
  });
});

describe('shape allow-listing', () => {
  const internalValues = [
    DEMO_WORKSPACE_ID,
    DEMO_ACCOUNT_SET_ID,
    'user_demo_editor',
    '"iss_',
    'cat_0',
    'segment',
    'subscriberCountTargeted',
  ];

  it('lists issues with exactly the summary fields and categories as exactly { name, slug }', async () => {
    const { app } = createDemoApp();
    const res = await app.request('/api/issues?limit=100');
    const text = await res.text();
    const body = JSON.parse(text) as ArchivePageBody;
    expect(Object.keys(body).sort()).toEqual(['data', 'meta', 'ok']);
    expect(Object.keys(body.meta).sort()).toEqual(['limit', 'nextOffset', 'offset', 'previousOffset', 'total']);
    expect(body.data.some((issue) => issue.category === null)).toBe(true);
    for (const issue of body.data) {
      expect(Object.keys(issue).sort()).toEqual(SUMMARY_KEYS);
      if (issue.category !== null) expect(Object.keys(issue.category).sort()).toEqual(['name', 'slug']);
    }
    const keys = collectKeys(body);
    for (const key of INTERNAL_KEYS) expect(keys.has(key)).toBe(false);
    for (const value of internalValues) expect(text).not.toContain(value);
  });

  it('returns an issue with exactly the summary fields plus contentHtml, newer and older', async () => {
    const { app } = createDemoApp();
    const res = await app.request('/api/issues/meet-the-rooftop-beekeepers-of-eastside');
    expect(res.status).toBe(200);
    const text = await res.text();
    const body = JSON.parse(text) as IssueBody;
    expect(Object.keys(body).sort()).toEqual(['data', 'ok']);
    expect(Object.keys(body.data).sort()).toEqual(DETAIL_KEYS);
    expect(body.data.category).toEqual({ name: 'Interviews', slug: 'interviews' });
    const keys = collectKeys(body);
    for (const key of INTERNAL_KEYS) expect(keys.has(key)).toBe(false);
    for (const value of internalValues) expect(text).not.toContain(value);
  });

  it('drops every internal and unknown upstream field from the list and the detail of a scripted upstream', async () => {
    const decorated = upstreamIssue(0, {
      slug: 'decorated',
      secretNote: 'do-not-publish-this',
      internalScore: 99,
      sourceIssueId: 'src_internal_1',
    });
    const { app } = createScriptedApp((call) =>
      call.url.pathname.startsWith('/v1/newsletter/issues/by-slug/')
        ? jsonResponse({ ok: true, data: decorated })
        : jsonResponse({ ok: true, data: [decorated] }),
    );
    for (const path of ['/api/issues', '/api/issues/decorated']) {
      const res = await app.request(path);
      expect(res.status).toBe(200);
      const text = await res.text();
      const keys = collectKeys(JSON.parse(text));
      for (const key of [...INTERNAL_KEYS, 'secretNote', 'internalScore', 'sourceIssueId']) expect(keys.has(key)).toBe(false);
      for (const value of [
        'ws_internal_9q8w',
        'acct-set-internal-5e6f',
        'iss_internal_0',
        'cat_internal_alpha',
        'user_internal_editor',
        'internal-segment',
        'editor-only-content',
        '4242',
        'do-not-publish-this',
        'src_internal_1',
      ]) {
        expect(text).not.toContain(value);
      }
    }
  });

  it('takes the category from the categories array when the single category field is absent', async () => {
    const withArrayOnly = upstreamIssue(0, { slug: 'array-category', category: undefined });
    const { app } = createScriptedApp(() => jsonResponse({ ok: true, data: [withArrayOnly] }));
    const { body } = await getList(app, '/api/issues');
    expect(body.data[0]!.category).toEqual({ name: 'Alpha', slug: 'alpha' });
  });
});

describe('an issue whose category slug breaks the slug rule', () => {
  const badCategory = { id: 'cat_amp', name: 'Cats & Dogs', slug: 'c&d' };
  const rows = [
    upstreamIssue(0, { slug: 'with-bad-category', category: badCategory, categories: [badCategory] }),
    upstreamIssue(1, { slug: 'with-bad-array-category', category: undefined, categories: [badCategory] }),
  ];
  // List Issues, and Get Issue by slug for the first row.
  const handler: FetchHandler = (call, index) =>
    call.url.pathname === '/v1/newsletter/issues/by-slug/with-bad-category'
      ? jsonResponse({ ok: true, data: rows[0] })
      : listIssuesHandler(rows)(call, index);

  it('is listed and opened with category null: no link to a category that could never be opened', async () => {
    const { app } = createScriptedApp(handler);
    const { res, body } = await getList(app, '/api/issues');
    expect(res.status).toBe(200);
    expect(body.data.map((issue) => [issue.slug, issue.category])).toEqual([
      ['with-bad-array-category', null],
      ['with-bad-category', null],
    ]);
    const detail = await app.request('/api/issues/with-bad-category');
    expect(detail.status).toBe(200);
    expect(((await detail.json()) as IssueBody).data.category).toBeNull();
    expect((await app.request('/api/issues?category=c%26d')).status).toBe(422);
  });
});

describe('upstream failures on the archive (cold cache)', () => {
  const UPSTREAM_WORDING = 'Internal database shard db-7 exploded';
  const upstreamHeaders = {
    'Set-Cookie': 'upstream_session=abc123secret; Path=/; HttpOnly',
    'X-Upstream-Secret': 'hunter2-upstream',
    'X-Powered-By': 'upstream-framework',
  };

  async function expectNothingOfTheUpstream(res: Response) {
    const text = await res.text();
    expect(text).not.toContain(UPSTREAM_WORDING);
    expect(text).not.toContain('hunter2-upstream');
    expect(text).not.toContain('abc123secret');
    expect(res.headers.get('set-cookie')).toBeNull();
    expect(res.headers.get('x-upstream-secret')).toBeNull();
    expect(res.headers.get('x-powered-by')).toBeNull();
    for (const [, value] of res.headers) {
      expect(value).not.toContain('hunter2-upstream');
      expect(value).not.toContain('abc123secret');
    }
    return JSON.parse(text) as ErrorBody;
  }

  it('answers 502 UPSTREAM_ERROR, never 401, when the upstream rejects our key, and logs it loudly', async () => {
    const { app, calls, logs } = createScriptedApp(() =>
      jsonResponse({ ok: false, error: { code: 'UNAUTHORIZED', message: UPSTREAM_WORDING } }, 401, upstreamHeaders),
    );
    const res = await app.request('/api/issues');
    expectErrorResponse(res, 502);
    expect(res.headers.get('www-authenticate')).toBeNull();
    const body = await expectNothingOfTheUpstream(res);
    expect(body).toEqual({ ok: false, error: { code: 'UPSTREAM_ERROR', message: expect.any(String) } });
    expect(calls).toHaveLength(1);
    expect(logs.entries()).toContainEqual(expect.objectContaining({ level: 'error', event: 'upstream_failure', kind: 'auth' }));
  });

  // A 404 on List Issues means our path is wrong (a wrong NEWSLETTER_API_BASE_URL): the site is
  // down, not the archive empty or missing, so it is an upstream failure, and said loudly.
  it('answers 502 UPSTREAM_ERROR, not 404, when List Issues answers 404, and logs an error with a hint', async () => {
    const { app, calls, logs } = createScriptedApp(() =>
      jsonResponse({ ok: false, error: { code: 'NOT_FOUND', message: UPSTREAM_WORDING } }, 404, upstreamHeaders),
    );
    const res = await app.request('/api/issues');
    expectErrorResponse(res, 502);
    const body = await expectNothingOfTheUpstream(res);
    expect(body).toEqual({ ok: false, error: { code: 'UPSTREAM_ERROR', message: expect.any(String) } });
    expect(calls).toHaveLength(1);
    expect(calls[0]!.url.pathname).toBe('/v1/newsletter/issues');
    expect(logs.entries()).toContainEqual(
      expect.objectContaining({
        level: 'error',
        event: 'upstream_failure',
        kind: 'not_found',
        status: 404,
        hint: expect.stringContaining('NEWSLETTER_API_BASE_URL'),
      }),
    );
  });

  it('answers 502 UPSTREAM_ERROR when the upstream answers 403', async () => {
    const { app } = createScriptedApp(() =>
      jsonResponse({ ok: false, error: { code: 'FORBIDDEN', message: UPSTREAM_WORDING } }, 403, upstreamHeaders),
    );
    const res = await app.request('/api/issues');
    expectErrorResponse(res, 502);
    expect((await expectNothingOfTheUpstream(res)).error.code).toBe('UPSTREAM_ERROR');
  });

  it('answers 503 UPSTREAM_UNAVAILABLE with Retry-After when the upstream call times out', async () => {
    const { app, calls } = createScriptedApp(() =>
      Promise.reject(new DOMException('The operation was aborted due to timeout', 'TimeoutError')),
    );
    const res = await app.request('/api/issues');
    expectErrorResponse(res, 503);
    expect(res.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
    const body = (await res.json()) as ErrorBody;
    expect(body).toEqual({ ok: false, error: { code: 'UPSTREAM_UNAVAILABLE', message: expect.any(String) } });
    expect(body.error.message).not.toContain('aborted');
    expect(calls.length).toBeGreaterThanOrEqual(1);
  });

  it('answers 503 with the upstream Retry-After of 7 seconds after a 429, and holds off further calls', async () => {
    const { app, calls } = createScriptedApp(() =>
      jsonResponse({ ok: false, error: { code: 'RATE_LIMITED', message: UPSTREAM_WORDING } }, 429, {
        ...upstreamHeaders,
        'Retry-After': '7',
      }),
    );
    const res = await app.request('/api/issues');
    expectErrorResponse(res, 503);
    expect(res.headers.get('retry-after')).toBe('7');
    expect((await expectNothingOfTheUpstream(res)).error.code).toBe('UPSTREAM_UNAVAILABLE');
    expect(calls).toHaveLength(1);

    const again = await app.request('/api/issues?limit=5');
    expectErrorResponse(again, 503);
    expect(again.headers.get('retry-after')).toBe('7');
    expect(calls).toHaveLength(1);
  });

  it.each([500, 502, 503, 504])('answers 502 UPSTREAM_ERROR after retrying an upstream %i with injected backoff', async (status) => {
    const { app, calls, sleeps } = createScriptedApp(() =>
      jsonResponse({ ok: false, error: { code: 'INTERNAL', message: UPSTREAM_WORDING } }, status, upstreamHeaders),
    );
    const res = await app.request('/api/issues');
    expectErrorResponse(res, 502);
    expect((await expectNothingOfTheUpstream(res)).error.code).toBe('UPSTREAM_ERROR');
    expect(calls).toHaveLength(3);
    expect(sleeps).toHaveLength(2);
  });

  it('serves the archive when a retried 503 is followed by a success', async () => {
    const { app, calls } = createScriptedApp((call, index) =>
      index === 0
        ? jsonResponse({ ok: false, error: { code: 'BUSY', message: UPSTREAM_WORDING } }, 503)
        : listIssuesHandler([upstreamIssue(0)])(call, index),
    );
    const { res, body } = await getList(app, '/api/issues');
    expect(res.status).toBe(200);
    expect(body.meta.total).toBe(1);
    expect(calls).toHaveLength(3);
  });

  const malformed: [label: string, respond: () => Response][] = [
    [
      'a body that is not JSON',
      () => new Response('{"ok": true, "data": [', { status: 200, headers: { 'Content-Type': 'application/json', ...upstreamHeaders } }),
    ],
    [
      'an HTML error page with status 200',
      () => new Response(`<html>${UPSTREAM_WORDING}</html>`, { status: 200, headers: { 'Content-Type': 'text/html' } }),
    ],
    ['data that is not an array', () => jsonResponse({ ok: true, data: { issues: [] } }, 200, upstreamHeaders)],
    ['ok: false with status 200', () => jsonResponse({ ok: false, error: { code: 'X', message: UPSTREAM_WORDING } }, 200, upstreamHeaders)],
    ['an empty body', () => new Response('', { status: 200 })],
  ];

  it('serves the archive without the rows that lack their required fields, and shows nothing of them', async () => {
    const { app } = createScriptedApp(() =>
      jsonResponse({ ok: true, data: [{ id: 42, slug: 'x', note: UPSTREAM_WORDING }] }, 200, upstreamHeaders),
    );
    const res = await app.request('/api/issues');
    expect(res.status).toBe(200);
    expect(await res.text()).not.toContain(UPSTREAM_WORDING);
  });

  it.each(malformed)('answers 502 UPSTREAM_ERROR for %s', async (_label, respond) => {
    const { app } = createScriptedApp(() => respond());
    const res = await app.request('/api/issues');
    expectErrorResponse(res, 502);
    const body = await expectNothingOfTheUpstream(res);
    expect(body).toEqual({ ok: false, error: { code: 'UPSTREAM_ERROR', message: expect.any(String) } });
  });

  it('passes no upstream header back on a success', async () => {
    const { app } = createScriptedApp(() => jsonResponse({ ok: true, data: [upstreamIssue(0)] }, 200, upstreamHeaders));
    const res = await app.request('/api/issues');
    expect(res.status).toBe(200);
    expect(res.headers.get('set-cookie')).toBeNull();
    expect(res.headers.get('x-upstream-secret')).toBeNull();
    expect(res.headers.get('x-powered-by')).toBeNull();
  });
});

describe('upstream failures on one issue (cold cache)', () => {
  it('still answers 404 NOT_FOUND for a slug the upstream does not know, and logs no upstream failure', async () => {
    const { app, calls, logs } = createScriptedApp(() =>
      jsonResponse({ ok: false, error: { code: 'NOT_FOUND', message: 'Issue not found' } }, 404),
    );
    const res = await app.request('/api/issues/no-such-issue');
    expectErrorResponse(res, 404);
    expect(((await res.json()) as ErrorBody).error.code).toBe('NOT_FOUND');
    expect(calls).toHaveLength(1);
    expect(calls[0]!.url.pathname).toBe('/v1/newsletter/issues/by-slug/no-such-issue');
    expect(logs.entries().filter((entry) => entry.event === 'upstream_failure')).toEqual([]);
  });

  it('answers 502 UPSTREAM_ERROR, never 401, when the upstream rejects our key', async () => {
    const { app } = createScriptedApp(() =>
      jsonResponse({ ok: false, error: { code: 'UNAUTHORIZED', message: 'bad key sk_live_zzz' } }, 401, { 'Set-Cookie': 'a=b' }),
    );
    const res = await app.request('/api/issues/some-issue');
    expectErrorResponse(res, 502);
    expect(res.headers.get('set-cookie')).toBeNull();
    const text = await res.text();
    expect(text).not.toContain('sk_live_zzz');
    expect((JSON.parse(text) as ErrorBody).error.code).toBe('UPSTREAM_ERROR');
  });

  it('answers 503 UPSTREAM_UNAVAILABLE with Retry-After when the upstream call times out', async () => {
    const { app } = createScriptedApp(() => Promise.reject(new DOMException('timed out', 'TimeoutError')));
    const res = await app.request('/api/issues/some-issue');
    expectErrorResponse(res, 503);
    expect(res.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
    expect(((await res.json()) as ErrorBody).error.code).toBe('UPSTREAM_UNAVAILABLE');
  });

  it('answers 502 UPSTREAM_ERROR for a wrongly shaped issue', async () => {
    const { app } = createScriptedApp(() => jsonResponse({ ok: true, data: [upstreamIssue(0)] }));
    const res = await app.request('/api/issues/issue-000');
    expectErrorResponse(res, 502);
    expect(((await res.json()) as ErrorBody).error.code).toBe('UPSTREAM_ERROR');
  });
});
