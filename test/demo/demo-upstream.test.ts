import { describe, it, expect } from 'vitest';
import { createDemoUpstream, DEMO_API_KEY, DEMO_BASE_URL, DEMO_BLOCKED_EMAIL, type DemoUpstream } from '../../src/demo/upstream.js';
import { createSamplePublication, type DemoCategory, type DemoIssue } from '../../src/demo/sample-publication.js';
import { SLUG_PATTERN } from '../../src/core/slug.js';
import { createUpstreamClient } from '../../src/core/upstream/newsletter-api.js';
import { UpstreamCategorySchema, UpstreamIssueSchema } from '../../src/core/upstream/schemas.js';
import { createFakeClock } from '../helpers.js';

interface Envelope<T = unknown> {
  ok: boolean;
  data?: T;
  error?: { code: string; message: string; details?: unknown };
}

interface CallOptions {
  method?: string;
  /** `null` sends no Authorization header; a string replaces the whole header value. */
  authorization?: string | null;
  body?: unknown;
}

/** Calls the demo upstream through its `fetch`, the way the real client does. */
async function callDemo<T = unknown>(demo: DemoUpstream, path: string, options: CallOptions = {}) {
  const headers: Record<string, string> = { Accept: 'application/json' };
  const authorization = options.authorization === undefined ? `Bearer ${demo.apiKey}` : options.authorization;
  if (authorization !== null) headers.Authorization = authorization;
  if (options.body !== undefined) headers['Content-Type'] = 'application/json';
  const response = await demo.fetch(`${demo.baseUrl}${path}`, {
    method: options.method ?? (options.body === undefined ? 'GET' : 'POST'),
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  return { status: response.status, body: (await response.json()) as Envelope<T> };
}

const listIssues = (demo: DemoUpstream, query: string) => callDemo<DemoIssue[]>(demo, `/newsletter/issues?${query}`);
const subscribe = (demo: DemoUpstream, body: unknown) => callDemo<Record<string, unknown>>(demo, '/newsletter/subscribers', { body });

const HIDDEN_SLUGS = {
  draft: 'winter-squash-varieties-compared',
  'half-written draft': 'gifts-for-gardeners-draft',
  'scheduled draft': 'december-planting-calendar',
  'private sent issue': 'members-only-harvest-report',
  'failed issue': 'failed-send-test',
  'issue still sending': 'sending-right-now',
};

const isPublished = (issue: DemoIssue) => issue.status === 'sent' && issue.isPublic;

describe('demo upstream authentication', () => {
  it('answers 401 UNAUTHORIZED in the error envelope without an Authorization header', async () => {
    const { status, body } = await callDemo(createDemoUpstream(), '/newsletter/categories', { authorization: null });
    expect(status).toBe(401);
    expect(body).toEqual({ ok: false, error: { code: 'UNAUTHORIZED', message: expect.any(String) } });
  });

  it.each([
    ['a wrong key', 'Bearer not-the-demo-key'],
    ['the right key without the Bearer scheme', DEMO_API_KEY],
    ['the right key with another scheme', `Basic ${DEMO_API_KEY}`],
  ])('answers 401 UNAUTHORIZED for %s', async (_label, authorization) => {
    const { status, body } = await callDemo(createDemoUpstream(), '/newsletter/issues?limit=1', { authorization });
    expect(status).toBe(401);
    expect(body.error?.code).toBe('UNAUTHORIZED');
    expect(body.data).toBeUndefined();
  });

  it('accepts only the key it was created with', async () => {
    const demo = createDemoUpstream({ apiKey: 'custom-demo-key' });
    expect((await callDemo(demo, '/newsletter/categories')).status).toBe(200);
    expect((await callDemo(demo, '/newsletter/categories', { authorization: `Bearer ${DEMO_API_KEY}` })).status).toBe(401);
  });

  it('refuses a subscribe without the key and records nobody', async () => {
    const demo = createDemoUpstream();
    const before = demo.subscribers.size;
    const { status } = await callDemo(demo, '/newsletter/subscribers', {
      authorization: null,
      body: { email: 'reader@example.com', optInAttestation: true, sourceType: 'embed' },
    });
    expect(status).toBe(401);
    expect(demo.subscribers.size).toBe(before);
  });
});

describe('demo upstream List Issues', () => {
  it('returns only sent public issues for status=sent&isPublic=true', async () => {
    const demo = createDemoUpstream();
    const { status, body } = await listIssues(demo, 'status=sent&isPublic=true&limit=200&offset=0');
    expect(status).toBe(200);
    expect(body.ok).toBe(true);
    const rows = body.data ?? [];
    expect(rows).toHaveLength(demo.issues.filter(isPublished).length);
    expect(rows.length).toBeGreaterThanOrEqual(40);
    expect(rows.every(isPublished)).toBe(true);
    for (const slug of Object.values(HIDDEN_SLUGS)) expect(rows.map((row) => row.slug)).not.toContain(slug);
  });

  it('filters by status alone and by isPublic alone', async () => {
    const demo = createDemoUpstream();
    const drafts = (await listIssues(demo, 'status=draft&limit=200')).body.data ?? [];
    expect(drafts.length).toBe(demo.issues.filter((issue) => issue.status === 'draft').length);
    expect(drafts.every((issue) => issue.status === 'draft')).toBe(true);
    const privateOnes = (await listIssues(demo, 'isPublic=false&limit=200')).body.data ?? [];
    expect(privateOnes.length).toBe(demo.issues.filter((issue) => !issue.isPublic).length);
    expect(privateOnes.every((issue) => issue.isPublic === false)).toBe(true);
    const publicDrafts = (await listIssues(demo, 'status=draft&isPublic=true&limit=200')).body.data ?? [];
    expect(publicDrafts.map((issue) => issue.slug)).toEqual([HIDDEN_SLUGS['scheduled draft']]);
  });

  it('pages with limit and offset over one stable order', async () => {
    const demo = createDemoUpstream();
    const all = (await listIssues(demo, 'status=sent&isPublic=true&limit=200')).body.data ?? [];
    const page = (await listIssues(demo, 'status=sent&isPublic=true&limit=10&offset=5')).body.data ?? [];
    expect(page.map((issue) => issue.id)).toEqual(all.slice(5, 15).map((issue) => issue.id));
    const pastTheEnd = await listIssues(demo, `status=sent&isPublic=true&limit=10&offset=${all.length}`);
    expect(pastTheEnd).toEqual({ status: 200, body: { ok: true, data: [] } });
  });

  it('returns at most 50 rows when no limit is given', async () => {
    const demo = createDemoUpstream();
    expect(demo.issues.length).toBeGreaterThan(50);
    expect((await listIssues(demo, '')).body.data).toHaveLength(50);
  });

  it('accepts the 200-row maximum', async () => {
    const { status, body } = await listIssues(createDemoUpstream(), 'limit=200');
    expect(status).toBe(200);
    expect(body.data?.length).toBeGreaterThan(50);
  });

  it.each([
    ['limit=201', 'limit'],
    ['limit=0', 'limit'],
    ['limit=1.5', 'limit'],
    ['limit=ten', 'limit'],
    ['offset=-1', 'offset'],
    ['status=published', 'status'],
    ['isPublic=yes', 'isPublic'],
  ])('answers 422 VALIDATION_ERROR for %s, naming %s in the details', async (query, path) => {
    const { status, body } = await listIssues(createDemoUpstream(), query);
    expect(status).toBe(422);
    expect(body.ok).toBe(false);
    expect(body.error?.code).toBe('VALIDATION_ERROR');
    expect(body.error?.details).toEqual([{ path, message: expect.any(String) }]);
  });
});

describe('demo upstream Get Issue By Slug', () => {
  it('returns a sent public issue with its HTML', async () => {
    const demo = createDemoUpstream();
    const { status, body } = await callDemo<DemoIssue>(demo, '/newsletter/issues/by-slug/what-to-sow-in-march');
    expect(status).toBe(200);
    expect(body.data).toMatchObject({ slug: 'what-to-sow-in-march', subject: 'What to Sow in March', status: 'sent', isPublic: true });
    expect(body.data?.contentHtml).toContain('<h1>What to Sow in March</h1>');
  });

  it.each(Object.entries(HIDDEN_SLUGS))('answers 404 NOT_FOUND for the %s', async (_label, slug) => {
    const demo = createDemoUpstream();
    expect(demo.issues.some((issue) => issue.slug === slug)).toBe(true);
    const { status, body } = await callDemo(demo, `/newsletter/issues/by-slug/${slug}`);
    expect(status).toBe(404);
    expect(body).toEqual({ ok: false, error: { code: 'NOT_FOUND', message: expect.any(String) } });
  });

  it('answers 404 NOT_FOUND for a slug that does not exist', async () => {
    const { status, body } = await callDemo(createDemoUpstream(), '/newsletter/issues/by-slug/no-such-issue');
    expect(status).toBe(404);
    expect(body.error?.code).toBe('NOT_FOUND');
  });
});

describe('demo upstream List Categories', () => {
  it('returns the four categories with their upstream fields', async () => {
    const { status, body } = await callDemo<DemoCategory[]>(createDemoUpstream(), '/newsletter/categories');
    expect(status).toBe(200);
    expect(body.data?.map(({ name, slug }) => ({ name, slug }))).toEqual([
      { name: 'Seasonal Guides', slug: 'seasonal-guides' },
      { name: 'Interviews', slug: 'interviews' },
      { name: 'Community', slug: 'community' },
      { name: 'Tools & Tech', slug: 'tools-and-tech' },
    ]);
    for (const category of body.data ?? []) expect(UpstreamCategorySchema.safeParse(category).success).toBe(true);
  });
});

describe('demo upstream Create Subscriber', () => {
  it('creates a subscriber and answers 200 with the subscriber record', async () => {
    const clock = createFakeClock(Date.UTC(2026, 10, 20, 12, 0, 0));
    const demo = createDemoUpstream({ now: clock.now });
    const { status, body } = await subscribe(demo, {
      email: ' Reader@Example.com ',
      optInAttestation: true,
      sourceType: 'embed',
      source: 'footer',
      sourcePlatform: 'x',
    });
    expect(status).toBe(200);
    expect(body.ok).toBe(true);
    expect(body.data).toMatchObject({
      emailNormalized: 'reader@example.com',
      emailOriginal: 'Reader@Example.com',
      status: 'subscribed',
      sourceType: 'embed',
      source: 'footer',
      sourcePlatform: 'x',
      createdAt: '2026-11-20T12:00:00.000Z',
    });
    expect(demo.subscribers.get('reader@example.com')?.status).toBe('subscribed');
  });

  it.each([
    ['optInAttestation false', { email: 'reader@example.com', optInAttestation: false, sourceType: 'embed' }, 'optInAttestation'],
    [
      'optInAttestation as the string "true"',
      { email: 'reader@example.com', optInAttestation: 'true', sourceType: 'embed' },
      'optInAttestation',
    ],
    ['optInAttestation missing', { email: 'reader@example.com', sourceType: 'embed' }, 'optInAttestation'],
    ['a bad email', { email: 'not-an-email', optInAttestation: true, sourceType: 'embed' }, 'email'],
    ['no email', { optInAttestation: true, sourceType: 'embed' }, 'email'],
    ['an unknown sourceType', { email: 'reader@example.com', optInAttestation: true, sourceType: 'website' }, 'sourceType'],
    [
      'a source over 160 characters',
      { email: 'reader@example.com', optInAttestation: true, sourceType: 'embed', source: 's'.repeat(161) },
      'source',
    ],
    [
      'an unknown sourcePlatform',
      { email: 'reader@example.com', optInAttestation: true, sourceType: 'embed', sourcePlatform: 'myspace' },
      'sourcePlatform',
    ],
  ])('answers 422 VALIDATION_ERROR for %s and records nobody', async (_label, input, path) => {
    const demo = createDemoUpstream();
    const before = demo.subscribers.size;
    const { status, body } = await subscribe(demo, input);
    expect(status).toBe(422);
    expect(body.error?.code).toBe('VALIDATION_ERROR');
    expect(body.error?.details).toEqual([{ path, message: expect.any(String) }]);
    expect(demo.subscribers.size).toBe(before);
  });

  it('answers 422 for a body that is not JSON', async () => {
    const demo = createDemoUpstream();
    const response = await demo.fetch(`${DEMO_BASE_URL}/newsletter/subscribers`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${DEMO_API_KEY}`, 'Content-Type': 'application/json' },
      body: '{not json',
    });
    expect(response.status).toBe(422);
  });

  it('resubscribes an existing address as the same subscriber', async () => {
    const demo = createDemoUpstream();
    const first = await subscribe(demo, { email: 'reader@example.com', optInAttestation: true, sourceType: 'embed' });
    const size = demo.subscribers.size;
    const again = await subscribe(demo, { email: 'READER@example.com', optInAttestation: true, sourceType: 'embed' });
    expect(again.status).toBe(200);
    expect(again.body.data?.id).toBe(first.body.data?.id);
    expect(again.body.data?.emailNormalized).toBe('reader@example.com');
    expect(demo.subscribers.size).toBe(size);
  });

  it('refuses the blocked address with a non-2xx error envelope and leaves it blocked', async () => {
    const demo = createDemoUpstream();
    const { status, body } = await subscribe(demo, { email: DEMO_BLOCKED_EMAIL, optInAttestation: true, sourceType: 'embed' });
    expect(status).toBeGreaterThanOrEqual(400);
    expect(status).toBe(409);
    expect(body.ok).toBe(false);
    expect(body.error?.code).toBe('SUBSCRIBER_BLOCKED');
    expect(demo.subscribers.get(DEMO_BLOCKED_EMAIL)?.status).toBe('blocked');
  });
});

describe('demo upstream boundaries', () => {
  it.each([
    'https://collector.evil.example/v1/newsletter/categories',
    'http://demo.newsletter.invalid/v1/newsletter/categories',
    'https://demo.newsletter.invalid:8443/v1/newsletter/categories',
  ])('throws for a request to another origin: %s', async (url) => {
    const demo = createDemoUpstream();
    await expect(demo.fetch(url, { headers: { Authorization: `Bearer ${DEMO_API_KEY}` } })).rejects.toThrow(TypeError);
  });

  it('answers a JSON 404 for an operation it does not implement', async () => {
    const { status, body } = await callDemo(createDemoUpstream(), '/newsletter/settings');
    expect(status).toBe(404);
    expect(body.error?.code).toBe('NOT_FOUND');
  });
});

describe('demo upstream behind the real upstream client', () => {
  function clientFor(demo: DemoUpstream, apiKey = demo.apiKey) {
    return createUpstreamClient({
      baseUrl: demo.baseUrl,
      apiKey,
      timeoutMs: 1000,
      fetch: demo.fetch,
      sleep: async () => undefined,
    });
  }

  it('serves the whole public archive through listAllPublicIssues', async () => {
    const demo = createDemoUpstream();
    const issues = await clientFor(demo).listAllPublicIssues(5000);
    expect(issues.map((issue) => issue.id).sort()).toEqual(
      demo.issues
        .filter(isPublished)
        .map((issue) => issue.id)
        .sort(),
    );
  });

  it('maps a hidden issue to kind not_found, a wrong key to auth and the blocked address to refused', async () => {
    const demo = createDemoUpstream();
    await expect(clientFor(demo).getIssueBySlug(HIDDEN_SLUGS['private sent issue'])).rejects.toMatchObject({ kind: 'not_found' });
    await expect(clientFor(demo, 'wrong-key').listCategories()).rejects.toMatchObject({ kind: 'auth' });
    await expect(
      clientFor(demo).createSubscriber({ email: DEMO_BLOCKED_EMAIL, optInAttestation: true, sourceType: 'embed', source: 'website' }),
    ).rejects.toMatchObject({ kind: 'refused' });
  });
});

describe('the sample publication', () => {
  const { categories, issues } = createSamplePublication();
  const published = issues.filter((issue) => isPublished(issue) && issue.slug);

  it('has at least 40 sent public issues, each with a slug that matches the public slug pattern', () => {
    expect(published.length).toBeGreaterThanOrEqual(40);
    for (const issue of published) expect(issue.slug).toMatch(SLUG_PATTERN);
  });

  it('gives every issue a unique id and every slugged issue a unique slug', () => {
    expect(new Set(issues.map((issue) => issue.id)).size).toBe(issues.length);
    const slugs = issues.map((issue) => issue.slug).filter((slug): slug is string => Boolean(slug));
    expect(new Set(slugs).size).toBe(slugs.length);
  });

  it('spreads the public issues over at least three categories, all from the category list', () => {
    const used = new Set(published.map((issue) => issue.category?.slug).filter(Boolean));
    expect(used.size).toBeGreaterThanOrEqual(3);
    const known = new Set(categories.map((category) => category.slug));
    for (const slug of used) expect(known.has(slug as string)).toBe(true);
  });

  it('gives every public issue a subject, a sentAt and HTML content', () => {
    for (const issue of published) {
      expect(issue.subject.length).toBeGreaterThan(0);
      expect(Number.isNaN(Date.parse(issue.sentAt ?? ''))).toBe(false);
      expect(issue.contentHtml).toMatch(/<p>/);
    }
  });

  it('holds drafts, a scheduled draft, a private sent issue and a failed one', () => {
    expect(issues.filter((issue) => issue.status === 'draft' && issue.scheduledFor === null).length).toBeGreaterThanOrEqual(1);
    expect(issues.filter((issue) => issue.status === 'draft' && issue.scheduledFor !== null).length).toBeGreaterThanOrEqual(1);
    expect(issues.filter((issue) => issue.status === 'sent' && !issue.isPublic).length).toBeGreaterThanOrEqual(1);
    expect(issues.filter((issue) => issue.status === 'failed').length).toBeGreaterThanOrEqual(1);
  });

  it('keeps every record in the upstream shape the client parses, with at most one category each', () => {
    for (const issue of issues) {
      expect(UpstreamIssueSchema.safeParse(issue).success).toBe(true);
      expect(issue.categories.length).toBeLessThanOrEqual(1);
    }
  });

  it('builds fresh records on every call', () => {
    const again = createSamplePublication();
    expect(again.issues).toEqual(issues);
    expect(again.issues[0]).not.toBe(issues[0]);
  });
});
