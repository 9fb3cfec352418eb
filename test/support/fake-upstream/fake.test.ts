import { describe, expect, it } from 'vitest';
import type { DemoIssue } from '../../../src/demo/sample-publication.js';
import { createArchive } from './archive.js';
import { createFakeUpstream, type FakeUpstreamOptions } from './fake.js';
import { ConnectionBroken, FAKE_UPSTREAM_ERROR_TEXT, type Delay } from './faults.js';
import { LIST_ISSUES_DEFAULT_ROWS, UPSTREAM_PATHS } from '../../../src/core/upstream/assumptions.js';
import { createFakeClock } from '../../helpers.js';

const KEY = 'fake-key-not-real';
const LIST = `/${UPSTREAM_PATHS.listIssues.join('/')}`;
const BY_SLUG = `/${UPSTREAM_PATHS.issueBySlug.join('/')}`;
const SUBSCRIBERS = `/${UPSTREAM_PATHS.createSubscriber.join('/')}`;

/** A fake over a 300-issue archive (more than any cap), with waits recorded instead of slept. */
function fakeWith(options: FakeUpstreamOptions = {}) {
  const waits: number[] = [];
  const delay: Delay = async (ms) => {
    waits.push(ms);
  };
  const fake = createFakeUpstream({ apiKey: KEY, publication: createArchive({ issues: 300, contentBytes: 100 }), delay, ...options });
  const call = (path: string, init: RequestInit = {}) =>
    fake.fetch(`${fake.baseUrl}${path}`, { ...init, headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' } });
  const rows = async (query: string) => ((await (await call(`${LIST}?${query}`)).json()) as { data: DemoIssue[] }).data;
  return { fake, call, rows, waits };
}

const subscriber = { email: 'reader@example.com', optInAttestation: true, sourceType: 'embed' };

describe('the fake upstream, as the assumptions say', () => {
  it('pages by limit and offset under the assumed names', async () => {
    const { rows } = fakeWith();
    const page = await rows('limit=10&offset=20');
    expect(page).toHaveLength(10);
    expect(page[0]!.slug).toBe('issue-280-weekly-notes');
  });

  it('answers the default page when no limit is sent', async () => {
    expect(await fakeWith().rows('offset=0')).toHaveLength(LIST_ISSUES_DEFAULT_ROWS);
  });

  it('answers under another base address, and refuses any other', async () => {
    const fake = createFakeUpstream({ apiKey: KEY, baseUrl: 'https://newsletter.test/v1' });
    const ok = await fake.fetch(`https://newsletter.test/v1/newsletter/categories`, { headers: { Authorization: `Bearer ${KEY}` } });
    expect(ok.status).toBe(200);
    await expect(fake.fetch('https://elsewhere.test/v1/newsletter/categories')).rejects.toThrow(TypeError);
  });

  it('counts calls per operation, and by-slug calls per known and unknown slug', async () => {
    const { fake, call } = fakeWith();
    await call(`${BY_SLUG}/issue-1-weekly-notes`);
    await call(`${BY_SLUG}/no-such-issue`);
    await call(`${LIST}?limit=1`);
    expect(fake.callsFor('GET /newsletter/issues/by-slug/:slug')).toBe(2);
    expect(fake.callsFor('GET /newsletter/issues')).toBe(1);
    expect(fake.slugCalls('issue-1-weekly-notes')).toBe(1);
    expect(fake.unknownSlugCalls).toBe(1);
  });
});

describe('the fake upstream, as a variant the assumptions did not foresee', () => {
  it('reads the row limit under another name: ours is ignored and a default page of 50 comes back', async () => {
    const { rows } = fakeWith({ variant: { limitParam: 'per_page' } });
    expect(await rows('limit=10')).toHaveLength(50);
    expect(await rows('per_page=10')).toHaveLength(10);
  });

  it('caps pages at 100 rows whatever is asked', async () => {
    const { rows } = fakeWith({ variant: { pageCap: 100 } });
    expect(await rows('limit=200')).toHaveLength(100);
    expect(await rows('limit=20')).toHaveLength(20);
  });

  it('pages by page number instead of offset', async () => {
    const { rows } = fakeWith({ variant: { paging: { style: 'page', param: 'page' } } });
    const second = await rows('limit=10&page=2');
    expect(second.map((issue) => issue.slug)[0]).toBe('issue-290-weekly-notes');
    // An offset means nothing to it: the first page comes back.
    expect((await rows('limit=10&offset=20'))[0]!.slug).toBe('issue-300-weekly-notes');
  });

  it('sends one issue with subject null, in the list and alone', async () => {
    const { rows, call } = fakeWith({ variant: { nullSubjectSlug: 'issue-299-weekly-notes' } });
    const page = await rows('limit=3');
    expect(page.map((issue) => issue.subject === null)).toEqual([false, true, false]);
    const alone = (await (await call(`${BY_SLUG}/issue-299-weekly-notes`)).json()) as { data: DemoIssue };
    expect(alone.data.subject).toBeNull();
  });

  it('answers Create Subscriber with 200 and a subscriber of status pending', async () => {
    const { call } = fakeWith({ variant: { pendingSubscribers: true } });
    const response = await call(SUBSCRIBERS, { method: 'POST', body: JSON.stringify(subscriber) });
    expect(response.status).toBe(200);
    expect(((await response.json()) as { data: { status: string } }).data.status).toBe('pending');
  });
});

describe('the fake upstream under load and faults', () => {
  it('lets N calls through per window, then answers 429 with the seconds left as Retry-After', async () => {
    const clock = createFakeClock();
    const { call } = fakeWith({ rateLimit: { calls: 2, windowMs: 10_000 }, now: clock.now });
    expect((await call(`${LIST}?limit=1`)).status).toBe(200);
    clock.advance(3_000);
    expect((await call(`${LIST}?limit=1`)).status).toBe(200);
    const limited = await call(`${LIST}?limit=1`);
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('7');
    clock.advance(7_000);
    expect((await call(`${LIST}?limit=1`)).status).toBe(200);
  });

  it('waits its latency before every answer, capped by the hold limit', async () => {
    const { fake, call, waits } = fakeWith({ latencyMs: 50, maxHoldMs: 1_000 });
    await call(`${LIST}?limit=1`);
    fake.setMode({ kind: 'latency', ms: 5_000 });
    await call(`${LIST}?limit=1`);
    expect(waits).toEqual([50, 50, 1_000]);
  });

  it('breaks the connection before the headers, or halfway through the body', async () => {
    const { fake, call } = fakeWith();
    fake.setMode({ kind: 'reset-before-headers', rst: true });
    await expect(call(`${LIST}?limit=1`)).rejects.toBeInstanceOf(ConnectionBroken);
    fake.setMode({ kind: 'reset-mid-body' });
    const response = await call(`${LIST}?limit=1`);
    await expect(response.text()).rejects.toBeInstanceOf(ConnectionBroken);
  });

  it('drips the body a byte per interval and gives up at the hold limit', async () => {
    const { fake, call, waits } = fakeWith({ maxHoldMs: 300 });
    fake.setMode({ kind: 'slow-drip', intervalMs: 100 });
    const response = await call(`${LIST}?limit=1`);
    await expect(response.text()).rejects.toBeInstanceOf(ConnectionBroken);
    expect(waits).toEqual([100, 100, 100, 100]);
  });

  it('truncates JSON, sends HTML, a status storm, a 429, a redirect and the wrong shape', async () => {
    const { fake, call } = fakeWith();
    fake.setMode({ kind: 'truncated-json' });
    await expect((await call(`${LIST}?limit=1`)).json()).rejects.toThrow(SyntaxError);
    fake.setMode({ kind: 'html' });
    expect((await call(`${LIST}?limit=1`)).headers.get('content-type')).toMatch(/^text\/html/);
    fake.setMode({ kind: 'status-storm', statuses: [500, 503] });
    const storm = [await call(LIST), await call(LIST), await call(LIST)];
    expect(storm.map((response) => response.status)).toEqual([500, 503, 500]);
    expect(await storm[0]!.text()).toContain(FAKE_UPSTREAM_ERROR_TEXT);
    fake.setMode({ kind: 'rate-limited', retryAfter: '9' });
    expect((await call(LIST)).headers.get('retry-after')).toBe('9');
    fake.setMode({ kind: 'redirect', status: 302, location: 'http://127.0.0.2/' });
    expect((await call(LIST)).headers.get('location')).toBe('http://127.0.0.2/');
    fake.setMode({ kind: 'wrong-shape' });
    expect(await (await call(LIST)).json()).toMatchObject({ ok: true, data: { id: 42 } });
  });

  it('streams a huge body of exactly the asked size, with or without its length', async () => {
    const { fake, call } = fakeWith();
    fake.setMode({ kind: 'huge-body', bytes: 200_000, declareLength: true });
    const declared = await call(LIST);
    expect(declared.headers.get('content-length')).toBe('200000');
    expect((await declared.arrayBuffer()).byteLength).toBe(200_000);
    fake.setMode({ kind: 'huge-body', bytes: 200_000, declareLength: false });
    const streamed = await call(LIST);
    expect(streamed.headers.get('content-length')).toBeNull();
    expect((await streamed.arrayBuffer()).byteLength).toBe(200_000);
  });

  it('hangs until the caller gives up', async () => {
    const { fake, call } = fakeWith({
      delay: (_ms, signal) => new Promise((_, reject) => signal?.addEventListener('abort', () => reject(signal.reason))),
    });
    fake.setMode({ kind: 'hang' });
    const controller = new AbortController();
    const pending = call(LIST, { signal: controller.signal });
    controller.abort(new Error('gave up'));
    await expect(pending).rejects.toThrow('gave up');
  });
});
