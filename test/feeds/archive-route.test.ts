import { parseFeed } from '@rowanmanning/feed-parser';
import { XMLValidator } from 'fast-xml-parser';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/core/config/config.js';
import { createDemoUpstream } from '../../src/demo/upstream.js';
import { silentLogger } from '../../src/core/log.js';
import { createAppForConfig, linkOriginOf } from '../../src/core/app.js';
import { TEST_API_KEY, createScriptedFetch, createTestApp, jsonResponse } from '../helpers.js';

/*
 * The archive route's feeds (routes/reads.ts, reads/archive-feeds.ts), read back with the feed
 * parser of feeds.test.ts. Here rather than in test/routes/: that parser's CommonJS dependency
 * does not load in workerd, and test/routes/ runs there too.
 */
const SITE_ISSUE_URL = 'https://news.example.com/issues/{slug}/';
const ATOM = 'application/atom+xml; charset=utf-8';
const RSS = 'application/rss+xml; charset=utf-8';
const JSON_TYPE = 'application/json';

interface Summary {
  slug: string;
  subject: string;
  previewText: string | null;
  sentAt: string | null;
  category: { name: string; slug: string } | null;
}

/** The real app over the demo upstream, with the upstream's traffic recorded in a call log. */
function createFeedApp(env: Record<string, string> = { SITE_ISSUE_URL }) {
  const demo = createDemoUpstream({ apiKey: TEST_API_KEY });
  const upstream = createScriptedFetch((call) => demo.fetch(call.url, { method: call.method, headers: call.headers }));
  const test = createTestApp({ fetch: upstream.fetch, env: { NEWSLETTER_API_BASE_URL: demo.baseUrl, ...env } });
  return { ...test, calls: upstream.calls };
}

/** Well-formed XML 1.0 (fast-xml-parser's validator), as in test/feeds. */
function expectWellFormed(xml: string) {
  expect(XMLValidator.validate(xml)).toBe(true);
}

async function jsonPage(app: { request(path: string): Response | Promise<Response> }, query: string): Promise<Summary[]> {
  const res = await app.request(`/api/issues${query}`);
  expect(res.status).toBe(200);
  return ((await res.json()) as { data: Summary[] }).data;
}

describe.each([
  { format: 'atom', type: ATOM, feedType: 'atom' },
  { format: 'rss', type: RSS, feedType: 'rss' },
] as const)('GET /api/issues?format=$format', ({ format, type, feedType }) => {
  it('answers the newest 20 issues as a feed a real parser reads: title, link, id, dates, summary, category', async () => {
    const { app } = createFeedApp();
    const expected = await jsonPage(app, '');
    const res = await app.request(`/api/issues?format=${format}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe(type);
    const xml = await res.text();
    expectWellFormed(xml);
    const feed = parseFeed(xml);
    expect(feed.meta.type).toBe(feedType);
    expect(feed.url).toBe('https://news.example.com/');
    expect(feed.items).toHaveLength(20);
    feed.items.forEach((item, position) => {
      const issue = expected[position]!;
      const page = `https://news.example.com/issues/${issue.slug}/`;
      expect(item.title).toBe(issue.subject);
      expect(item.url).toBe(page);
      expect(item.id).toBe(page);
      expect(item.published?.toISOString()).toBe(issue.sentAt);
      expect(item.description).toBe(issue.previewText);
      expect(item.categories.map((category) => category.label ?? category.term)).toEqual(issue.category ? [issue.category.name] : []);
    });
    if (feedType === 'atom') expect(feed.items[0]!.updated?.toISOString()).toBe(expected[0]!.sentAt);
  });

  it('applies limit, offset and category as the JSON page does, and links itself by the validated query', async () => {
    const { app } = createFeedApp();
    const query = '?category=interviews&limit=3&offset=1';
    const expected = await jsonPage(app, query);
    const feed = parseFeed(await (await app.request(`/api/issues${query}&format=${format}&utm_source=x`)).text());
    expect(feed.items.map((item) => item.url)).toEqual(expected.map((issue) => `https://news.example.com/issues/${issue.slug}/`));
    expect(feed.title).toBe('news.example.com: Interviews');
    // Without PUBLIC_BASE_URL the service does not know its address: no self link rather than a relative one.
    expect(feed.self).toBeNull();
  });

  it('is named by PUBLICATION_NAME and links itself absolutely under PUBLIC_BASE_URL', async () => {
    const { app } = createFeedApp({
      SITE_ISSUE_URL,
      PUBLICATION_NAME: 'Les Carnets & Co',
      PUBLIC_BASE_URL: 'https://api.news.example.com/bff/',
    });
    const whole = await (await app.request(`/api/issues?format=${format}`)).text();
    expectWellFormed(whole);
    const feed = parseFeed(whole);
    expect(feed.title).toBe('Les Carnets & Co');
    expect(feed.self).toBe(`https://api.news.example.com/bff/api/issues?format=${format}`);
    if (feedType === 'atom') expect(feed.authors.map((author) => author.name)).toEqual(['Les Carnets & Co']);
    const category = parseFeed(await (await app.request(`/api/issues?format=${format}&category=interviews&limit=3&offset=1`)).text());
    expect(category.title).toBe('Les Carnets & Co: Interviews');
    expect(category.self).toBe(`https://api.news.example.com/bff/api/issues?format=${format}&category=interviews&limit=3&offset=1`);
  });

  it('carries the JSON answer’s Cache-Control, a strong ETag, X-Cache and Vary: Accept, and answers a matching If-None-Match with 304', async () => {
    const { app } = createFeedApp();
    const json = await app.request('/api/issues');
    const first = await app.request(`/api/issues?format=${format}`);
    expect(first.headers.get('cache-control')).toBe(json.headers.get('cache-control'));
    expect(first.headers.get('vary')).toBe('Origin, Accept');
    expect(first.headers.get('x-cache')).toBe('HIT');
    const etag = first.headers.get('etag')!;
    expect(etag).toMatch(/^"[\w-]{24}"$/);
    expect(etag).not.toBe(json.headers.get('etag'));

    const again = await app.request(`/api/issues?format=${format}`);
    expect(again.headers.get('etag')).toBe(etag);
    expect(await again.text()).toBe(await first.text());

    const notModified = await app.request(`/api/issues?format=${format}`, { headers: { 'If-None-Match': `W/${etag}` } });
    expect(notModified.status).toBe(304);
    expect(await notModified.text()).toBe('');
    expect(notModified.headers.get('etag')).toBe(etag);
    expect(notModified.headers.get('vary')).toBe('Origin, Accept');
  });

  it('keeps a hostile subject, preview and category name as text in a well-formed document', async () => {
    const hostile = 'A <b>bold</b> & "quoted" ]]> <![CDATA[x]]> \u0001\u000B end';
    const clean = 'A <b>bold</b> & "quoted" ]]> <![CDATA[x]]>  end';
    const row = {
      id: 'iss_1',
      slug: 'hostile-one',
      subject: hostile,
      previewText: hostile,
      thumbnailUrl: null,
      status: 'sent',
      isPublic: true,
      category: { id: 'cat_1', name: hostile, slug: 'odd' },
      sentAt: '2026-01-01T09:00:00.000Z',
    };
    const upstream = createScriptedFetch(() => jsonResponse({ ok: true, data: [row] }));
    const { app } = createTestApp({ fetch: upstream.fetch, env: { SITE_ISSUE_URL } });
    const xml = await (await app.request(`/api/issues?format=${format}`)).text();
    expectWellFormed(xml);
    expect(xml).not.toContain('<b>');
    const [item] = parseFeed(xml).items;
    expect(item!.title).toBe(clean);
    expect(item!.description).toBe(clean);
    expect(item!.categories.map((category) => category.label ?? category.term)).toEqual([clean]);
  });
});

describe('GET /api/issues content negotiation', () => {
  it.each([
    { accept: undefined, type: JSON_TYPE },
    { accept: 'application/atom+xml', type: ATOM },
    { accept: 'application/rss+xml', type: RSS },
    { accept: '*/*', type: JSON_TYPE },
    { accept: 'application/*', type: JSON_TYPE },
    { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8', type: JSON_TYPE },
    { accept: 'application/json;q=0.5, application/atom+xml', type: ATOM },
    { accept: 'application/atom+xml;q=0.4, application/json', type: JSON_TYPE },
    { accept: 'application/rss+xml, application/atom+xml;q=0.9', type: RSS },
    { accept: 'application/rss+xml, */*', type: RSS },
    { accept: 'application/atom+xml;q=0.1, */*;q=0.8', type: JSON_TYPE },
    { accept: 'application/atom+xml;q=0', type: JSON_TYPE },
    { accept: 'Application/RSS+XML', type: RSS },
  ])('answers Accept: $accept with $type', async ({ accept, type }) => {
    const { app } = createFeedApp();
    const res = await app.request('/api/issues', { headers: accept === undefined ? {} : { Accept: accept } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe(type);
    expect(res.headers.get('vary')).toBe('Origin, Accept');
  });

  it('lets ?format= win over Accept, json included', async () => {
    const { app } = createFeedApp();
    const headers = { Accept: 'application/atom+xml' };
    expect((await app.request('/api/issues?format=json', { headers })).headers.get('content-type')).toBe(JSON_TYPE);
    expect((await app.request('/api/issues?format=rss', { headers })).headers.get('content-type')).toBe(RSS);
  });

  it.each(['xml', 'ATOM', '', 'json1'])('answers format=%j with 422 and makes no upstream call', async (format) => {
    const { app, calls } = createFeedApp();
    const res = await app.request(`/api/issues?format=${format}`);
    expect(res.status).toBe(422);
    const body = (await res.json()) as { error: { code: string; details: { path: string }[] } };
    expect(body.error.code).toBe('VALIDATION_ERROR');
    expect(body.error.details.map((detail) => detail.path)).toEqual(['format']);
    expect(calls).toHaveLength(0);
  });

  it('serves JSON, Atom and RSS from one upstream read of the archive, each rendered once', async () => {
    const { app, calls, stats } = createFeedApp();
    await app.request('/api/issues');
    const reads = calls.length;
    expect(reads).toBeGreaterThan(0);
    const tags = new Set<string>();
    for (const format of ['atom', 'rss', 'atom', 'rss', 'json']) {
      tags.add((await app.request(`/api/issues?format=${format}`)).headers.get('etag')!);
    }
    expect(tags.size).toBe(3);
    expect(calls).toHaveLength(reads);
    expect(stats()).toMatchObject({ renderedFeeds: 2, renderedPages: 1 });
  });
});

describe('GET /api/issues feeds without SITE_ISSUE_URL', () => {
  it.each<{ query: string; headers: Record<string, string> }>([
    { query: '?format=atom', headers: {} },
    { query: '?format=rss', headers: {} },
    { query: '', headers: { Accept: 'application/atom+xml' } },
  ])('answers $query $headers with 404 NOT_FOUND saying feeds are off, without an upstream call', async ({ query, headers }) => {
    const { app, calls } = createFeedApp({});
    const res = await app.request(`/api/issues${query}`, { headers });
    expect(res.status).toBe(404);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(body.error).toEqual({ code: 'NOT_FOUND', message: 'Feeds are off: this service has no SITE_ISSUE_URL to link issues to.' });
    expect(calls).toHaveLength(0);
  });

  it('still answers the JSON archive', async () => {
    const { app } = createFeedApp({});
    expect((await app.request('/api/issues')).status).toBe(200);
  });
});

describe('demo mode', () => {
  function createDemoService(demoOrigin: string) {
    const parsed = parseConfig({});
    if (!parsed.ok) throw new Error(parsed.problems.join('; '));
    return createAppForConfig(parsed.config, { log: silentLogger, clientIp: () => undefined, demoOrigin }).app;
  }

  it('links feed entries to the example site’s issue page and thumbnails to the origin it is given', async () => {
    const app = createDemoService('http://127.0.0.1:9123');
    const [first] = await jsonPage(app, '?limit=1');
    const feed = parseFeed(await (await app.request('/api/issues?format=atom&limit=1')).text());
    expect(feed.items[0]!.url).toBe(`http://127.0.0.1:9123/issue.html?slug=${first!.slug}`);
    const json = (await (await app.request('/api/issues?limit=1')).json()) as { data: { thumbnailUrl: string }[] };
    expect(json.data[0]!.thumbnailUrl).toBe(`http://127.0.0.1:9123/thumbnails/${first!.slug}.svg`);
  });

  it('names the feeds after the sample publication and links them absolutely at the origin it is given', async () => {
    const app = createDemoService('http://127.0.0.1:9123');
    const feed = parseFeed(await (await app.request('/api/issues?format=atom&limit=1')).text());
    expect(feed.title).toBe('The Field Notes');
    expect(feed.authors.map((author) => author.name)).toEqual(['The Field Notes']);
    expect(feed.self).toBe('http://127.0.0.1:9123/api/issues?format=atom&limit=1');
  });

  it.each([
    ['127.0.0.1', 8787, 'http://127.0.0.1:8787'],
    ['0.0.0.0', 3000, 'http://127.0.0.1:3000'],
    ['::', 3000, 'http://[::1]:3000'],
    ['::1', 8080, 'http://[::1]:8080'],
    ['bff.internal.example', 80, 'http://bff.internal.example:80'],
  ])('links a listener on %s port %i as %s', (host, port, origin) => {
    expect(linkOriginOf(host, port)).toBe(origin);
  });
});
