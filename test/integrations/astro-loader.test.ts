import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Hono } from 'hono';
import { sanitizeLetter } from '../../src/tools/site/sanitize.js';
import { SiteReadError } from '../../src/tools/site/read.js';
import {
  newsletterLoader,
  type NewsletterEntry,
  type NewsletterLoader,
  type NewsletterLoaderContext,
  type NewsletterLoaderOptions,
} from '../../src/integrations/astro.js';
import { createFakeUpstream } from '../support/fake-upstream/fake.js';
import { createNodeBodyEncoder } from '../../src/node/compression.js';
import { createFakeClock, createTestApp, TEST_API_KEY, TEST_BASE_URL } from '../helpers.js';

const URL_OF_SERVICE = 'https://bff.example.com';
/** An issue page's fields but its HTML (the entry's rendered letter). */
const ENTRY_FIELDS = [
  'category',
  'newer',
  'older',
  'previewText',
  'readingMinutes',
  'sentAt',
  'slug',
  'subject',
  'thumbnailUrl',
  'updatedAt',
];

/**
 * What Astro gives a loader, kept between builds as Astro's data store keeps it: entries whose
 * `set` is refused when the digest is the same, a meta store of strings, and `parseData` that
 * runs the loader's own schema (the collection declares none of its own).
 */
function createAstroContext(loader: NewsletterLoader) {
  const entries = new Map<string, NewsletterEntry>();
  const meta = new Map<string, string>();
  const lines: string[] = [];
  let writes = 0;
  const context: NewsletterLoaderContext = {
    collection: 'issues',
    store: {
      get: (id) => entries.get(id),
      set(entry) {
        const existing = entries.get(entry.id);
        if (existing && entry.digest !== undefined && existing.digest === entry.digest) return false;
        entries.set(entry.id, entry);
        writes++;
        return true;
      },
      keys: () => [...entries.keys()],
      delete: (id) => void entries.delete(id),
    },
    meta: { get: (key) => meta.get(key), set: (key, value) => void meta.set(key, value) },
    logger: { info: (message) => void lines.push(message), warn: (message) => void lines.push(`warn: ${message}`) },
    async parseData({ data }) {
      return (await loader.schema()).parse(data) as unknown as typeof data;
    },
    generateDigest: (data) =>
      createHash('sha256')
        .update(typeof data === 'string' ? data : JSON.stringify(data))
        .digest('hex'),
  };
  return { context, entries, meta, lines, writes: () => writes };
}

/**
 * The service as the loader reads it, over the one fake upstream: a fresh service process per
 * build (nothing cached between builds but what the loader kept), every answer's status counted.
 * With `compress`, it keeps compressed copies as the Node entry does, and requests ask for them
 * unless they say otherwise, as Node's fetch does.
 */
function createService({ compress = false } = {}) {
  const clock = createFakeClock();
  const upstream = createFakeUpstream({ apiKey: TEST_API_KEY, baseUrl: TEST_BASE_URL, now: clock.now });
  let statuses: { path: string; status: number }[] = [];
  return {
    upstream,
    clock,
    /** A new service over the same upstream, as the next build finds it. */
    start() {
      const { app } = createTestApp({ fetch: upstream.fetch, clock, ...(compress ? { encodeBody: createNodeBodyEncoder() } : {}) });
      statuses = [];
      const fetch = async (input: RequestInfo | URL, init?: RequestInit) => {
        const headers = new Headers(init?.headers);
        if (!headers.has('accept-encoding')) headers.set('accept-encoding', 'gzip, deflate');
        const response = await app.request(input, { ...init, headers });
        statuses.push({ path: new URL(input instanceof Request ? input.url : String(input)).pathname, status: response.status });
        // Decoded, as fetch hands a body to its caller.
        const coding = response.headers.get('content-encoding');
        if (coding !== 'gzip' || !response.body) return response;
        return new Response(response.body.pipeThrough(new DecompressionStream('gzip')), {
          status: response.status,
          headers: response.headers,
        });
      };
      return fetch as typeof globalThis.fetch;
    },
    statuses: () => statuses,
  };
}

async function build(context: NewsletterLoaderContext, options: Omit<NewsletterLoaderOptions, 'url'> & { url?: string }) {
  const loader = newsletterLoader({ url: URL_OF_SERVICE, ...options });
  await loader.load(context);
  return loader;
}

describe('newsletterLoader (newsletter-bff/astro)', () => {
  it('stores one entry per public issue, its id the slug, its data the public fields, its letter sanitised as the rendered HTML', async () => {
    const service = createService();
    const loader = newsletterLoader({ url: URL_OF_SERVICE, fetch: service.start() });
    const astro = createAstroContext(loader);
    await loader.load(astro.context);

    const archive = service.upstream.demo.issues.filter((issue) => issue.status === 'sent' && issue.isPublic && issue.slug);
    expect([...astro.entries.keys()].sort()).toEqual(archive.map((issue) => issue.slug).sort());
    const entry = astro.entries.get('planning-next-years-plot')!;
    expect(entry.id).toBe('planning-next-years-plot');
    expect(Object.keys(entry.data).sort()).toEqual(ENTRY_FIELDS);
    expect(entry.data.subject).toBe("Planning Next Year's Plot");
    const letter = archive.find((issue) => issue.slug === entry.id)!.contentHtml!;
    expect(entry.rendered?.html).toBe(sanitizeLetter(letter));
    // One archive page (48 issues < 100), then each issue once.
    expect(service.statuses().map((answer) => answer.status)).toEqual([200, ...archive.map(() => 200)]);
    expect(astro.lines).toEqual([`${archive.length} issues from ${URL_OF_SERVICE}: ${archive.length} read, 0 unchanged, 0 removed`]);
  });

  it('drops what a letter must not bring onto the site’s own pages: scripts, handlers, frames', async () => {
    const service = createService();
    service.upstream.edit('planning-next-years-plot', {
      contentHtml:
        '<h1>Plot</h1><p onclick="steal()">Dig <a href="javascript:steal()">here</a>.</p><script>steal()</script><iframe src="https://x.example"></iframe>',
    });
    const loader = newsletterLoader({ url: URL_OF_SERVICE, fetch: service.start() });
    const astro = createAstroContext(loader);
    await loader.load(astro.context);
    expect(astro.entries.get('planning-next-years-plot')?.rendered?.html).toBe(
      '<h1>Plot</h1><p>Dig <a rel="noopener noreferrer" target="_blank">here</a>.</p>',
    );
  });

  it('keeps the service’s HTML with sanitize: false, and hands each letter to the site’s own function', async () => {
    const service = createService();
    service.upstream.edit('planning-next-years-plot', { contentHtml: '<h1>Plot</h1><script>x()</script>' });
    const raw = createAstroContext(newsletterLoader({ url: URL_OF_SERVICE }));
    await build(raw.context, { fetch: service.start(), sanitize: false });
    expect(raw.entries.get('planning-next-years-plot')?.rendered?.html).toBe('<h1>Plot</h1><script>x()</script>');

    const own = createAstroContext(newsletterLoader({ url: URL_OF_SERVICE }));
    await build(own.context, {
      fetch: service.start(),
      sanitize: (html, issue) => `<section data-slug="${issue.slug}">${html.toUpperCase()}</section>`,
    });
    expect(own.entries.get('planning-next-years-plot')?.rendered?.html).toBe(
      '<section data-slug="planning-next-years-plot"><H1>PLOT</H1><SCRIPT>X()</SCRIPT></section>',
    );
  });

  it('on the next build reads no issue of an unchanged archive: each summary’s updatedAt is the one it holds', async () => {
    const service = createService();
    const astro = createAstroContext(newsletterLoader({ url: URL_OF_SERVICE }));
    await build(astro.context, { fetch: service.start() });
    const before = new Map(astro.entries);
    await build(astro.context, { fetch: service.start() });
    expect(service.statuses()).toEqual([{ path: '/api/issues', status: 200 }]);
    expect(new Map(astro.entries)).toEqual(before);
  });

  it('on the next build asks for each issue it holds with If-None-Match where the upstream gives no updatedAt: a 304 per issue and no letter', async () => {
    // Compressed copies too: the validator it keeps must be one the next service instance still gives.
    const service = createService({ compress: true });
    for (const issue of service.upstream.demo.issues) delete (issue as { updatedAt?: unknown }).updatedAt;
    const astro = createAstroContext(newsletterLoader({ url: URL_OF_SERVICE }));
    await build(astro.context, { fetch: service.start() });
    const before = new Map(astro.entries);
    const writes = astro.writes();

    await build(astro.context, { fetch: service.start() });
    const [archivePage, ...issues] = service.statuses();
    expect(archivePage).toEqual({ path: '/api/issues', status: 200 });
    expect(issues).toHaveLength(before.size);
    expect(issues.every((answer) => answer.status === 304)).toBe(true);
    expect(astro.writes()).toBe(writes);
    expect(new Map(astro.entries)).toEqual(before);
    expect(astro.lines.at(-1)).toBe(`${before.size} issues from ${URL_OF_SERVICE}: 0 read, ${before.size} unchanged, 0 removed`);
  });

  it('reads again an edited issue, adds a new one and removes one that left the archive, and leaves the rest alone', async () => {
    const service = createService();
    const astro = createAstroContext(newsletterLoader({ url: URL_OF_SERVICE }));
    await build(astro.context, { fetch: service.start() });
    const count = astro.entries.size;

    service.upstream.edit('planning-next-years-plot', { contentHtml: '<p>Revised.</p>' });
    service.upstream.publish('a-brand-new-letter');
    service.upstream.unpublish('a-year-of-small-plots');
    await build(astro.context, { fetch: service.start() });

    const read = service.statuses().filter((answer) => answer.path.startsWith('/api/issues/') && answer.status === 200);
    expect(read.map((answer) => answer.path).sort()).toEqual(['/api/issues/a-brand-new-letter', '/api/issues/planning-next-years-plot']);
    expect(astro.entries.get('planning-next-years-plot')?.rendered?.html).toBe('<p>Revised.</p>');
    expect(astro.entries.has('a-brand-new-letter')).toBe(true);
    expect(astro.entries.has('a-year-of-small-plots')).toBe(false);
    expect(astro.entries.size).toBe(count);
    expect(astro.lines.at(-1)).toBe(`${count} issues from ${URL_OF_SERVICE}: 2 read, ${count - 2} unchanged, 1 removed`);
  });

  it('reads every issue whole again when the previous build read another service', async () => {
    const service = createService();
    const astro = createAstroContext(newsletterLoader({ url: URL_OF_SERVICE }));
    await build(astro.context, { fetch: service.start() });
    await build(astro.context, { fetch: service.start(), url: 'https://other-bff.example.com' });
    expect(service.statuses().every((answer) => answer.status === 200)).toBe(true);
  });

  it('stops the build with the route and status when the service fails, rather than leave holes', async () => {
    const service = createService();
    const astro = createAstroContext(newsletterLoader({ url: URL_OF_SERVICE }));
    const start = service.start();
    const failing = (async (input: RequestInfo | URL, init?: RequestInit) =>
      String(input).endsWith('/api/issues/planning-next-years-plot')
        ? Response.json({ ok: false, error: { code: 'UPSTREAM_ERROR', message: 'x' } }, { status: 502 })
        : start(input, init)) as typeof globalThis.fetch;
    await expect(build(astro.context, { fetch: failing })).rejects.toThrow(
      new SiteReadError('GET /api/issues/planning-next-years-plot answered 502'),
    );
  });

  it('waits out a busy answer for the time it names, as the site builder does', async () => {
    const service = createService();
    const start = service.start();
    let refused = false;
    const busyOnce = (async (input: RequestInfo | URL, init?: RequestInit) => {
      if (refused) return start(input, init);
      refused = true;
      return Response.json(
        { ok: false, error: { code: 'UPSTREAM_UNAVAILABLE', message: 'busy' } },
        { status: 503, headers: { 'Retry-After': '7' } },
      );
    }) as typeof globalThis.fetch;
    const waits: number[] = [];
    const astro = createAstroContext(newsletterLoader({ url: URL_OF_SERVICE }));
    await build(astro.context, { fetch: busyOnce, sleep: async (ms) => void waits.push(ms) });
    expect(waits).toEqual([7000]);
    expect(astro.lines[0]).toBe('/api/issues answered 503: reading it again in 7 s');
    expect(astro.entries.size).toBeGreaterThan(0);
  });
});

/**
 * A service as the contract describes it once summaries carry `updatedAt` and issue pages their
 * neighbours (`newer`, `older`): the loader is written against those fields, present or not.
 */
function createServiceWithDates(issues: { slug: string; updatedAt: string; html: string }[]) {
  const requests: string[] = [];
  const summaryOf = (issue: (typeof issues)[number]) => ({
    slug: issue.slug,
    subject: issue.slug.toUpperCase(),
    previewText: null,
    thumbnailUrl: null,
    sentAt: null,
    category: null,
    updatedAt: issue.updatedAt,
  });
  const neighbour = (index: number) => {
    const issue = issues[index];
    return issue ? { slug: issue.slug, subject: issue.slug.toUpperCase(), sentAt: null } : null;
  };
  const app = new Hono()
    .get('/api/issues', (c) => c.json({ ok: true, data: issues.map(summaryOf), meta: { total: issues.length, limit: 100, offset: 0 } }))
    .get('/api/issues/:slug', (c) => {
      const index = issues.findIndex((issue) => issue.slug === c.req.param('slug'));
      const issue = issues[index];
      if (!issue) return c.json({ ok: false, error: { code: 'NOT_FOUND', message: 'Not found.' } }, 404);
      return c.json({
        ok: true,
        data: { ...summaryOf(issue), contentHtml: issue.html, newer: neighbour(index - 1), older: neighbour(index + 1) },
      });
    });
  const fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
    requests.push(new URL(String(input)).pathname);
    return app.request(input, init);
  }) as typeof globalThis.fetch;
  return { issues, fetch, requests };
}

describe('newsletterLoader with a service that dates its summaries (updatedAt)', () => {
  it('reads no issue whose updatedAt is unchanged, and refreshes the neighbours of those it keeps from the archive', async () => {
    const service = createServiceWithDates([
      { slug: 'second', updatedAt: '2026-02-01T00:00:00.000Z', html: '<p>2</p>' },
      { slug: 'first', updatedAt: '2026-01-01T00:00:00.000Z', html: '<p>1</p>' },
    ]);
    const astro = createAstroContext(newsletterLoader({ url: URL_OF_SERVICE }));
    await build(astro.context, { fetch: service.fetch });
    expect(astro.entries.get('second')?.data).toMatchObject({
      updatedAt: '2026-02-01T00:00:00.000Z',
      newer: null,
      older: { slug: 'first' },
    });

    service.issues.unshift({ slug: 'third', updatedAt: '2026-03-01T00:00:00.000Z', html: '<p>3</p>' });
    service.requests.length = 0;
    await build(astro.context, { fetch: service.fetch });
    expect(service.requests).toEqual(['/api/issues', '/api/issues/third']);
    expect(astro.entries.get('second')?.data).toMatchObject({
      newer: { slug: 'third', subject: 'THIRD', sentAt: null },
      older: { slug: 'first' },
    });
    expect(astro.entries.get('second')?.rendered?.html).toBe('<p>2</p>');
    expect(astro.entries.get('third')?.data).toMatchObject({ newer: null, older: { slug: 'second' } });
  });

  it('reads an issue again when its updatedAt moved', async () => {
    const service = createServiceWithDates([{ slug: 'only', updatedAt: '2026-01-01T00:00:00.000Z', html: '<p>before</p>' }]);
    const astro = createAstroContext(newsletterLoader({ url: URL_OF_SERVICE }));
    await build(astro.context, { fetch: service.fetch });
    service.issues[0] = { slug: 'only', updatedAt: '2026-01-02T00:00:00.000Z', html: '<p>after</p>' };
    service.requests.length = 0;
    await build(astro.context, { fetch: service.fetch });
    expect(service.requests).toEqual(['/api/issues', '/api/issues/only']);
    expect(astro.entries.get('only')?.rendered?.html).toBe('<p>after</p>');
  });
});
