import { describe, expect, it } from 'vitest';
import { createDemoUpstream } from '../../src/demo/upstream.js';
import { DEMO_ACCOUNT_SET_ID, DEMO_WORKSPACE_ID } from '../../src/demo/sample-publication.js';
import { TEST_API_KEY, TEST_BASE_URL, createScriptedFetch, createTestApp, jsonResponse, type FetchHandler } from '../helpers.js';

interface CategoriesBody {
  ok: true;
  data: { name: string; slug: string; count: number }[];
}

interface ErrorBody {
  ok: false;
  error: { code: string; message: string; details?: unknown };
}

/** The real app over the demo upstream, with the demo's traffic recorded in a call log. */
function createDemoApp() {
  const demo = createDemoUpstream({ apiKey: TEST_API_KEY });
  const upstream = createScriptedFetch((call) => demo.fetch(call.url, { method: call.method, headers: call.headers }));
  const test = createTestApp({ fetch: upstream.fetch, env: { NEWSLETTER_API_BASE_URL: demo.baseUrl } });
  return { ...test, demo, calls: upstream.calls };
}

const CATEGORIES_PATH = '/v1/newsletter/categories';

/**
 * The app over a scripted List Categories; the archive it counts issues in (List Issues) is
 * empty unless `issues` is given. `calls` are the calls to List Categories.
 */
function createScriptedApp(handler: FetchHandler, issues: unknown[] = []) {
  const upstream = createScriptedFetch((call, index) =>
    call.url.pathname === CATEGORIES_PATH
      ? handler(call, index)
      : jsonResponse({ ok: true, data: call.url.searchParams.get('offset') === '0' || !call.url.searchParams.has('offset') ? issues : [] }),
  );
  const calls = upstream.calls;
  return {
    ...createTestApp({ fetch: upstream.fetch }),
    calls: {
      get length() {
        return calls.filter((call) => call.url.pathname === CATEGORIES_PATH).length;
      },
      all: calls,
    },
  };
}

/** The public issues of the demo publication in one category, as the route counts them. */
function demoCount(demo: ReturnType<typeof createDemoUpstream>, slug: string): number {
  return demo.issues.filter((issue) => issue.status === 'sent' && issue.isPublic && issue.slug && issue.category?.slug === slug).length;
}

function upstreamCategory(id: string, name: string, slug: string) {
  return {
    id,
    workspaceId: 'ws_internal_cat',
    accountSetId: 'acct-set-internal-cat',
    name,
    slug,
    createdAt: '2025-01-01T00:00:00.000Z',
    updatedAt: '2025-02-01T00:00:00.000Z',
  };
}

describe('GET /api/categories', () => {
  it('lists the demo categories as { name, slug, count }, sorted by name, counting public issues from the archive', async () => {
    const { app, calls, demo } = createDemoApp();
    const res = await app.request('/api/categories');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await res.json()).toEqual({
      ok: true,
      data: [
        { name: 'Community', slug: 'community', count: demoCount(demo, 'community') },
        { name: 'Interviews', slug: 'interviews', count: demoCount(demo, 'interviews') },
        { name: 'Seasonal Guides', slug: 'seasonal-guides', count: demoCount(demo, 'seasonal-guides') },
        { name: 'Tools & Tech', slug: 'tools-and-tech', count: demoCount(demo, 'tools-and-tech') },
      ],
    });
    const categoryCalls = calls.filter((call) => call.url.pathname === CATEGORIES_PATH);
    expect(categoryCalls).toHaveLength(1);
    expect(categoryCalls[0]!.method).toBe('GET');
    expect(categoryCalls[0]!.headers.get('authorization')).toBe(`Bearer ${TEST_API_KEY}`);
    // The counts come from the archive index: each a total the archive route gives for the category.
    for (const category of ((await (await app.request('/api/categories')).json()) as CategoriesBody).data) {
      const page = (await (await app.request(`/api/issues?category=${category.slug}`)).json()) as { meta: { total: number } };
      expect(category.count).toBe(page.meta.total);
    }
    expect(demoCount(demo, 'interviews')).toBeGreaterThan(0);
  });

  it('counts a category with no public issue as 0, and an issue published since once the categories are refreshed', async () => {
    const issue = (id: string, subject: string, category: string, status = 'sent') => ({
      id,
      slug: id,
      subject,
      status,
      isPublic: true,
      sentAt: '2026-01-01T00:00:00.000Z',
      category: { name: category, slug: category.toLowerCase() },
    });
    const issues = [issue('thyme', 'Thyme', 'Herbs'), issue('draft-mint', 'Mint', 'Herbs', 'draft')];
    const { app, clock } = createScriptedApp(
      () => jsonResponse({ ok: true, data: [upstreamCategory('c1', 'Herbs', 'herbs'), upstreamCategory('c2', 'Tools', 'tools')] }),
      issues,
    );
    const counts = async () => ((await (await app.request('/api/categories')).json()) as CategoriesBody).data.map((c) => [c.slug, c.count]);
    expect(await counts()).toEqual([
      ['herbs', 1],
      ['tools', 0],
    ]);
    issues.push(issue('trowels', 'Trowels', 'Tools'));
    // Within the TTL both copies stand; past it (and the stale window) both are read again.
    expect(await counts()).toEqual([
      ['herbs', 1],
      ['tools', 0],
    ]);
    clock.advance((60 + 300 + 1) * 1000);
    expect(await counts()).toEqual([
      ['herbs', 1],
      ['tools', 1],
    ]);
  });

  it('leaves out the ids, workspace, account set and timestamps of each category', async () => {
    const { app } = createDemoApp();
    const res = await app.request('/api/categories');
    const text = await res.text();
    const body = JSON.parse(text) as CategoriesBody;
    for (const category of body.data) expect(Object.keys(category).sort()).toEqual(['count', 'name', 'slug']);
    for (const internal of [
      '"id"',
      'workspaceId',
      'accountSetId',
      'createdAt',
      'updatedAt',
      'cat_0',
      DEMO_WORKSPACE_ID,
      DEMO_ACCOUNT_SET_ID,
    ]) {
      expect(text).not.toContain(internal);
    }
  });

  it('sorts by name whatever order and letter case the upstream uses', async () => {
    const { app, calls } = createScriptedApp(() =>
      jsonResponse({
        ok: true,
        data: [
          upstreamCategory('c1', 'Zucchini', 'zucchini'),
          upstreamCategory('c2', 'apples', 'apples'),
          upstreamCategory('c3', 'Mushrooms', 'mushrooms'),
          upstreamCategory('c4', 'beans', 'beans'),
        ],
      }),
    );
    const res = await app.request('/api/categories');
    expect(res.status).toBe(200);
    const text = await res.text();
    expect((JSON.parse(text) as CategoriesBody).data).toEqual([
      { name: 'apples', slug: 'apples', count: 0 },
      { name: 'beans', slug: 'beans', count: 0 },
      { name: 'Mushrooms', slug: 'mushrooms', count: 0 },
      { name: 'Zucchini', slug: 'zucchini', count: 0 },
    ]);
    expect(text).not.toContain('ws_internal_cat');
    expect(text).not.toContain('acct-set-internal-cat');
    expect(calls).toHaveLength(1);
    expect(calls.all.some((call) => `${call.url.origin}${call.url.pathname}` === `${TEST_BASE_URL}/newsletter/categories`)).toBe(true);
  });

  it('drops unknown fields the upstream adds to a category', async () => {
    const { app } = createScriptedApp(() =>
      jsonResponse({
        ok: true,
        data: [{ ...upstreamCategory('c1', 'Herbs', 'herbs'), issueCount: 12, ownerEmail: 'owner@internal.example' }],
      }),
    );
    const text = await (await app.request('/api/categories')).text();
    expect(JSON.parse(text)).toEqual({ ok: true, data: [{ name: 'Herbs', slug: 'herbs', count: 0 }] });
    expect(text).not.toContain('owner@internal.example');
  });

  it('answers a second request from the cache without another upstream call', async () => {
    const { app, calls } = createDemoApp();
    const first = await app.request('/api/categories');
    const made = calls.length;
    const second = await app.request('/api/categories');
    expect(second.status).toBe(200);
    expect(await second.text()).toBe(await first.text());
    expect(second.headers.get('etag')).toBe(first.headers.get('etag'));
    expect(calls).toHaveLength(made);
  });

  it('ignores a query string: same body, same ETag, no further upstream call', async () => {
    const { app, calls } = createDemoApp();
    const plain = await app.request('/api/categories');
    const made = calls.length;
    const decorated = await app.request('/api/categories?include=workspaceId&limit=1');
    expect(decorated.status).toBe(200);
    expect(await decorated.text()).toBe(await plain.text());
    expect(decorated.headers.get('etag')).toBe(plain.headers.get('etag'));
    expect(calls).toHaveLength(made);
  });

  it('answers 502 UPSTREAM_ERROR with no-store, never 401 and never the upstream wording, when the key is rejected', async () => {
    const { app } = createScriptedApp(() =>
      jsonResponse({ ok: false, error: { code: 'UNAUTHORIZED', message: 'key sk_live_abc is revoked' } }, 401, {
        'Set-Cookie': 'upstream=1',
        'X-Upstream-Secret': 'hunter2',
      }),
    );
    const res = await app.request('/api/categories');
    expect(res.status).toBe(502);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('set-cookie')).toBeNull();
    expect(res.headers.get('x-upstream-secret')).toBeNull();
    const text = await res.text();
    expect(text).not.toContain('sk_live_abc');
    expect(JSON.parse(text)).toEqual({ ok: false, error: { code: 'UPSTREAM_ERROR', message: expect.any(String) } });
  });

  // A 404 on List Categories means our path is wrong (a wrong NEWSLETTER_API_BASE_URL), not
  // that a category is missing: an upstream failure, and said loudly.
  it('answers 502 UPSTREAM_ERROR, not 404, when List Categories answers 404, and logs an error with a hint', async () => {
    const { app, calls, logs } = createScriptedApp(() =>
      jsonResponse({ ok: false, error: { code: 'NOT_FOUND', message: 'Cannot GET /newsletter/categories' } }, 404),
    );
    const res = await app.request('/api/categories');
    expect(res.status).toBe(502);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const text = await res.text();
    expect(text).not.toContain('Cannot GET');
    expect(JSON.parse(text)).toEqual({ ok: false, error: { code: 'UPSTREAM_ERROR', message: expect.any(String) } });
    expect(calls).toHaveLength(1);
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

  it('serves the other categories when one lacks its name', async () => {
    const { app } = createScriptedApp(() =>
      jsonResponse({
        ok: true,
        data: [
          { id: 'c1', slug: 'nameless' },
          { id: 'c2', name: 'Tools', slug: 'tools' },
        ],
      }),
    );
    const res = await app.request('/api/categories');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true, data: [{ name: 'Tools', slug: 'tools', count: 0 }] });
  });

  it('drops a category whose slug breaks the slug rule, so every listed one can be linked', async () => {
    const { app } = createScriptedApp(() =>
      jsonResponse({
        ok: true,
        data: [
          upstreamCategory('cat_amp', 'Cats & Dogs', 'c&d'),
          upstreamCategory('cat_dot', 'Dots', 'a.b'),
          upstreamCategory('cat_ok', 'Tools', 'tools'),
          upstreamCategory('cat_dash', 'Dash', '-lead'),
        ],
      }),
    );
    const res = await app.request('/api/categories');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true, data: [{ name: 'Tools', slug: 'tools', count: 0 }] });
  });

  it('answers 503 UPSTREAM_UNAVAILABLE with Retry-After 7 when the upstream answers 429 with Retry-After: 7', async () => {
    const { app } = createScriptedApp(() =>
      jsonResponse({ ok: false, error: { code: 'RATE_LIMITED', message: 'slow down' } }, 429, { 'Retry-After': '7' }),
    );
    const res = await app.request('/api/categories');
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('7');
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(((await res.json()) as ErrorBody).error.code).toBe('UPSTREAM_UNAVAILABLE');
  });
});
