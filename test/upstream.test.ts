import { describe, it, expect, vi } from 'vitest';
import {
  createUpstreamClient,
  createUpstreamUrlBuilder,
  parseRetryAfter,
  readWholeArchive,
  UpstreamError,
  type ListIssuesQuery,
  type UpstreamClientOptions,
} from '../src/upstream.js';
import type { CreateSubscriberBody, UpstreamIssue } from '../src/upstream-schemas.js';
import {
  createFakeClock,
  createScriptedFetch,
  isWorkerd,
  jsonResponse,
  TEST_API_KEY,
  TEST_BASE_URL,
  type FetchHandler,
} from './helpers.js';

const ACCOUNT_SET_ID = '3b9d2c4e-8f1a-4c6b-9e2d-5a7f0c1b8e34';
/** A sentence only the upstream says; it must never surface in one of our errors. */
const UPSTREAM_SENTENCE = 'The purple walrus refuses workspace ws_secret_991 today';

/** An issue record with every documented field, as the upstream would send it. */
function upstreamIssue(n: number, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: `iss_${String(n).padStart(4, '0')}`,
    slug: `issue-${n}`,
    workspaceId: 'ws_1',
    accountSetId: ACCOUNT_SET_ID,
    subject: `Issue ${n}`,
    previewText: null,
    thumbnailUrl: null,
    contentHtml: `<p>Issue ${n}</p>`,
    contentJson: null,
    scheduledFor: null,
    audience: null,
    status: 'sent',
    isPublic: true,
    category: null,
    categories: [],
    stats: {
      newSubscriberCount: 0,
      subscriberCountTargeted: 10,
      sentCount: 10,
      deliveredCount: 10,
      openedCount: 5,
      clickedCount: 1,
      bouncedCount: 0,
      complainedCount: 0,
      failedCount: 0,
    },
    createdBy: 'user_1',
    sentAt: '2026-01-04T09:00:00.000Z',
    createdAt: '2026-01-01T09:00:00.000Z',
    updatedAt: '2026-01-04T08:00:00.000Z',
    ...overrides,
  };
}

function upstreamCategory(slug: string, name: string): Record<string, unknown> {
  return {
    id: `cat_${slug}`,
    workspaceId: 'ws_1',
    accountSetId: ACCOUNT_SET_ID,
    name,
    slug,
    createdAt: '2026-01-01T00:00:00.000Z',
    updatedAt: '2026-01-01T00:00:00.000Z',
  };
}

const SUBSCRIBER_BODY: CreateSubscriberBody = {
  email: 'reader@example.com',
  optInAttestation: true,
  sourceType: 'embed',
  source: 'website',
};

function errorBody(code: string, message = UPSTREAM_SENTENCE) {
  return { ok: false, error: { code, message } };
}

/** The real client over a scripted fetch, a fake clock and sleeps that only record their delay. */
function setup(handler: FetchHandler, overrides: Partial<UpstreamClientOptions> = {}) {
  const clock = createFakeClock();
  const sleeps: number[] = [];
  const scripted = createScriptedFetch(handler);
  const client = createUpstreamClient({
    baseUrl: TEST_BASE_URL,
    apiKey: TEST_API_KEY,
    timeoutMs: 5000,
    fetch: scripted.fetch,
    random: () => 0.5,
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    now: clock.now,
    ...overrides,
  });
  return { client, calls: scripted.calls, sleeps, clock };
}

/** Awaits a promise that must reject with an UpstreamError, and returns that error. */
async function failureOf(promise: Promise<unknown>): Promise<UpstreamError> {
  const outcome = await promise.then(
    (value) => ({ rejected: false as const, value }),
    (error: unknown) => ({ rejected: true as const, error }),
  );
  if (!outcome.rejected) throw new Error(`expected an UpstreamError, got a result: ${JSON.stringify(outcome.value)}`);
  expect(outcome.error).toBeInstanceOf(UpstreamError);
  return outcome.error as UpstreamError;
}

const categoriesOk = () => jsonResponse({ ok: true, data: [upstreamCategory('guides', 'Guides')] });

function timeoutError(): DOMException {
  return new DOMException('The operation was aborted due to timeout', 'TimeoutError');
}

function connectionReset(): TypeError {
  const cause = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
  return new TypeError('fetch failed', { cause });
}

describe('upstream client request shape', () => {
  it('sends only the Bearer key and Accept: application/json on a GET, with no body', async () => {
    const { client, calls } = setup(categoriesOk);
    await client.listCategories();
    expect(calls).toHaveLength(1);
    expect(calls[0]?.method).toBe('GET');
    expect([...(calls[0]?.headers.entries() ?? [])]).toEqual([
      ['accept', 'application/json'],
      ['authorization', `Bearer ${TEST_API_KEY}`],
    ]);
    expect(calls[0]?.body).toBeUndefined();
  });

  it('adds Content-Type: application/json only on the POST, and sends exactly the subscriber body', async () => {
    const { client, calls } = setup(() => jsonResponse({ ok: true, data: { id: 'sub_1', status: 'subscribed' } }));
    await client.createSubscriber(SUBSCRIBER_BODY);
    expect(calls[0]?.method).toBe('POST');
    expect([...(calls[0]?.headers.entries() ?? [])]).toEqual([
      ['accept', 'application/json'],
      ['authorization', `Bearer ${TEST_API_KEY}`],
      ['content-type', 'application/json'],
    ]);
    expect(JSON.parse(calls[0]?.body ?? 'null')).toEqual(SUBSCRIBER_BODY);
  });

  it('asks fetch not to follow redirects and passes a live abort signal on every call', async () => {
    const { client, calls } = setup((call) =>
      call.method === 'POST' ? jsonResponse({ ok: true, data: {} }) : jsonResponse({ ok: true, data: [] }),
    );
    await client.listCategories();
    await client.listIssues({ status: 'sent', isPublic: true, limit: 10, offset: 0 });
    await client.createSubscriber(SUBSCRIBER_BODY);
    expect(calls).toHaveLength(3);
    for (const call of calls) {
      expect(call.redirect).toBe('manual');
      expect(call.signal).toBeInstanceOf(AbortSignal);
      expect(call.signal?.aborted).toBe(false);
    }
  });

  it('arms the signal with AbortSignal.timeout and the configured timeout', async () => {
    const spy = vi.spyOn(AbortSignal, 'timeout');
    try {
      const { client, calls } = setup(categoriesOk, { timeoutMs: 1234 });
      await client.listCategories();
      expect(spy).toHaveBeenCalledTimes(1);
      expect(spy).toHaveBeenCalledWith(1234);
      expect(calls[0]?.signal).toBe(spy.mock.results[0]?.value);
    } finally {
      spy.mockRestore();
    }
  });

  it('lists issues at /newsletter/issues with status, isPublic and the assumed limit and offset parameters', async () => {
    const { client, calls } = setup(() => jsonResponse({ ok: true, data: [] }));
    await client.listIssues({ status: 'sent', isPublic: true, limit: 200, offset: 400 });
    expect(calls[0]?.url.href).toBe(`${TEST_BASE_URL}/newsletter/issues?status=sent&isPublic=true&limit=200&offset=400`);
  });

  it('reads the whole archive with status=sent&isPublic=true', async () => {
    const { client, calls } = setup(() => jsonResponse({ ok: true, data: [] }));
    await client.listAllPublicIssues(5000);
    expect(calls.map((call) => call.url.href)).toEqual([
      `${TEST_BASE_URL}/newsletter/issues?status=sent&isPublic=true&limit=200&offset=0`,
    ]);
  });

  it('gets one issue at /newsletter/issues/by-slug/:slug', async () => {
    const { client, calls } = setup(() => jsonResponse({ ok: true, data: upstreamIssue(1) }));
    await client.getIssueBySlug('what-to-sow_in-March2');
    expect(calls[0]?.url.href).toBe(`${TEST_BASE_URL}/newsletter/issues/by-slug/what-to-sow_in-March2`);
  });

  it('lists categories at /newsletter/categories', async () => {
    const { client, calls } = setup(categoriesOk);
    await client.listCategories();
    expect(calls[0]?.url.href).toBe(`${TEST_BASE_URL}/newsletter/categories`);
  });

  it('creates a subscriber with a POST to /newsletter/subscribers', async () => {
    const { client, calls } = setup(() => jsonResponse({ ok: true, data: {} }));
    await client.createSubscriber(SUBSCRIBER_BODY);
    expect(calls[0]?.method).toBe('POST');
    expect(calls[0]?.url.href).toBe(`${TEST_BASE_URL}/newsletter/subscribers`);
  });

  it('keeps a base URL with a deeper path and a trailing slash, without doubling the slash', async () => {
    const { client, calls } = setup(categoriesOk, { baseUrl: 'https://api.example.com/newsletter-api/v1/' });
    await client.listCategories();
    expect(calls[0]?.url.href).toBe('https://api.example.com/newsletter-api/v1/newsletter/categories');
  });
});

describe('upstream client results', () => {
  it('returns the parsed issue list', async () => {
    const { client } = setup(() => jsonResponse({ ok: true, data: [upstreamIssue(1), upstreamIssue(2)] }));
    const issues = await client.listIssues({ status: 'sent', isPublic: true, limit: 2, offset: 0 });
    expect(issues.map((issue) => [issue.id, issue.slug, issue.subject])).toEqual([
      ['iss_0001', 'issue-1', 'Issue 1'],
      ['iss_0002', 'issue-2', 'Issue 2'],
    ]);
  });

  it('tolerates unknown extra fields and drops them, workspace and account-set ids included', async () => {
    const { client } = setup(() =>
      jsonResponse({
        ok: true,
        data: upstreamIssue(7, { futureField: { nested: true }, category: upstreamCategory('tools', 'Tools') }),
        meta: { requestId: 'req_1' },
      }),
    );
    const issue = await client.getIssueBySlug('issue-7');
    expect(issue.subject).toBe('Issue 7');
    expect(issue.category).toEqual({ id: 'cat_tools', name: 'Tools', slug: 'tools' });
    expect(issue).not.toHaveProperty('futureField');
    expect(issue).not.toHaveProperty('workspaceId');
    expect(issue).not.toHaveProperty('accountSetId');
  });

  it('returns categories with only the fields we read', async () => {
    const { client } = setup(categoriesOk);
    expect(await client.listCategories()).toEqual([{ id: 'cat_guides', name: 'Guides', slug: 'guides' }]);
  });

  it('accepts any 2xx status for a success', async () => {
    const { client } = setup(() => jsonResponse({ ok: true, data: { id: 'sub_9', status: 'subscribed' } }, 201));
    expect(await client.createSubscriber(SUBSCRIBER_BODY)).toEqual({ id: 'sub_9', status: 'subscribed' });
  });
});

describe('upstream client failures', () => {
  it('returns kind timeout and does not retry when the upstream times out', async () => {
    const { client, calls, sleeps } = setup(() => Promise.reject(timeoutError()));
    const error = await failureOf(client.listCategories());
    expect(error.kind).toBe('timeout');
    expect(calls).toHaveLength(1);
    expect(sleeps).toEqual([]);
  });

  it('retries a connection reset twice with growing backoff, then returns kind unavailable', async () => {
    const { client, calls, sleeps } = setup(() => Promise.reject(connectionReset()));
    const error = await failureOf(client.listCategories());
    expect(error.kind).toBe('unavailable');
    expect(calls).toHaveLength(3);
    // random() = 0.5 over ceilings of 100 ms and 200 ms: full jitter, doubling per attempt.
    expect(sleeps).toEqual([50, 100]);
  });

  it('succeeds after one retry when a connection reset is followed by an answer', async () => {
    const { client, calls, sleeps } = setup((_call, index) => (index === 0 ? Promise.reject(connectionReset()) : categoriesOk()));
    expect(await client.listCategories()).toHaveLength(1);
    expect(calls).toHaveLength(2);
    expect(sleeps).toEqual([50]);
  });

  it('succeeds after one retry with the backoff delay recorded when a 5xx is followed by success', async () => {
    const { client, calls, sleeps } = setup((_call, index) =>
      index === 0 ? jsonResponse(errorBody('INTERNAL'), 503) : categoriesOk(),
    );
    expect(await client.listCategories()).toEqual([{ id: 'cat_guides', name: 'Guides', slug: 'guides' }]);
    expect(calls).toHaveLength(2);
    expect(sleeps).toEqual([50]);
  });

  it('gives up after 3 calls in total and returns kind unavailable when every call is a 5xx', async () => {
    const statuses = [500, 502, 504];
    const { client, calls, sleeps } = setup((_call, index) => jsonResponse(errorBody('INTERNAL'), statuses[index] ?? 500));
    const error = await failureOf(client.listCategories());
    expect(error.kind).toBe('unavailable');
    expect(error.status).toBe(504);
    expect(calls).toHaveLength(3);
    expect(sleeps).toEqual([50, 100]);
  });

  it('caps the backoff delay at maxDelayMs', async () => {
    const { client, calls, sleeps } = setup(() => jsonResponse(errorBody('INTERNAL'), 503), {
      getRetries: 5,
      random: () => 1,
      baseDelayMs: 100,
      maxDelayMs: 500,
    });
    await failureOf(client.listCategories());
    expect(calls).toHaveLength(6);
    expect(sleeps).toEqual([100, 200, 400, 500, 500]);
  });

  it.each([501, 505])('does not retry a %i, which will not get better, and returns kind bad_response', async (status) => {
    const { client, calls, sleeps } = setup(() => jsonResponse(errorBody('NOT_IMPLEMENTED'), status));
    const error = await failureOf(client.listCategories());
    expect(error.kind).toBe('bad_response');
    expect(error.status).toBe(status);
    expect(calls).toHaveLength(1);
    expect(sleeps).toEqual([]);
  });

  it.each([
    [401, 'auth'],
    [403, 'refused'],
    [404, 'not_found'],
    [422, 'validation'],
    [409, 'refused'],
    [400, 'refused'],
  ] as const)('maps a %i to kind %s without retrying', async (status, kind) => {
    const { client, calls, sleeps } = setup(() => jsonResponse(errorBody('SOME_CODE'), status));
    const error = await failureOf(client.getIssueBySlug('some-issue'));
    expect(error.kind).toBe(kind);
    expect(error.status).toBe(status);
    expect(calls).toHaveLength(1);
    expect(sleeps).toEqual([]);
  });

  it('maps the upstream code NOT_FOUND to kind not_found at another 4xx status', async () => {
    const { client } = setup(() => jsonResponse(errorBody('NOT_FOUND'), 400));
    const error = await failureOf(client.getIssueBySlug('gone'));
    expect(error.kind).toBe('not_found');
    expect(error.upstreamCode).toBe('NOT_FOUND');
  });

  it('decides the kind from the status alone when the error body is not JSON', async () => {
    const { client } = setup(() => new Response('<h1>Unauthorized</h1>', { status: 401, headers: { 'Content-Type': 'text/html' } }));
    const error = await failureOf(client.listCategories());
    expect(error.kind).toBe('auth');
    expect(error.upstreamCode).toBeUndefined();
  });

  it.each([
    ['malformed JSON', () => new Response('{"ok": true, "data": [', { status: 200, headers: { 'Content-Type': 'application/json' } })],
    [
      'an HTML page',
      () => new Response('<!doctype html><html><body>Maintenance</body></html>', { status: 200, headers: { 'Content-Type': 'text/html' } }),
    ],
    ['an empty body', () => new Response(null, { status: 200 })],
    ['invalid UTF-8', () => new Response(new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]), { status: 200 })],
    ['an error envelope with a 200', () => jsonResponse(errorBody('INTERNAL'), 200)],
    ['data as an object where an array is expected', () => jsonResponse({ ok: true, data: { issues: [upstreamIssue(1)] } })],
    ['an issue missing its subject', () => jsonResponse({ ok: true, data: [upstreamIssue(1, { subject: undefined })] })],
    ['an issue with a numeric id', () => jsonResponse({ ok: true, data: [upstreamIssue(1, { id: 42 })] })],
    ['no ok flag', () => jsonResponse({ data: [] })],
  ])('returns kind bad_response and does not retry for %s', async (_label, respond) => {
    const { client, calls, sleeps } = setup(respond);
    const error = await failureOf(client.listIssues({ status: 'sent', isPublic: true, limit: 10, offset: 0 }));
    expect(error.kind).toBe('bad_response');
    expect(error.status).toBe(200);
    expect(calls).toHaveLength(1);
    expect(sleeps).toEqual([]);
  });

  it('returns kind bad_response for a single issue that is missing its subject', async () => {
    const { client } = setup(() => jsonResponse({ ok: true, data: upstreamIssue(3, { subject: undefined }) }));
    expect((await failureOf(client.getIssueBySlug('issue-3'))).kind).toBe('bad_response');
  });

  it('returns kind bad_response for a category without a slug', async () => {
    const { client } = setup(() => jsonResponse({ ok: true, data: [{ id: 'cat_1', name: 'Guides' }] }));
    expect((await failureOf(client.listCategories())).kind).toBe('bad_response');
  });

  it('refuses a body whose declared Content-Length is over the cap without reading it', async () => {
    let cancelled = false;
    // A body that never ends: reading it to the end would hang this test.
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('{"ok":true,"data":['));
      },
      pull: () => new Promise<void>(() => undefined),
      cancel() {
        cancelled = true;
      },
    });
    const { client, calls } = setup(() => new Response(body, { status: 200, headers: { 'Content-Length': '2048' } }), {
      maxResponseBytes: 1024,
    });
    const error = await failureOf(client.listCategories());
    expect(error.kind).toBe('bad_response');
    expect(calls).toHaveLength(1);
    // workerd adopts a JS stream into its own pipe, so the source's cancel is observable on Node only.
    if (!isWorkerd()) expect(cancelled).toBe(true);
  });

  it('stops reading a streamed body with no Content-Length once it passes the cap', async () => {
    let chunksServed = 0;
    let cancelled = false;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (chunksServed === 100) {
          controller.close();
          return;
        }
        chunksServed += 1;
        controller.enqueue(new Uint8Array(256).fill(0x20));
      },
      cancel() {
        cancelled = true;
      },
    });
    const { client, calls } = setup(() => new Response(body, { status: 200 }), { maxResponseBytes: 1024 });
    const error = await failureOf(client.listCategories());
    expect(error.kind).toBe('bad_response');
    expect(calls).toHaveLength(1);
    expect(cancelled).toBe(true);
    expect(chunksServed).toBeLessThan(100);
  });

  it('accepts a body of exactly maxResponseBytes', async () => {
    const text = JSON.stringify({ ok: true, data: [{ id: 'cat_1', name: 'Guides', slug: 'guides' }] });
    const { client } = setup(() => new Response(text, { status: 200 }), { maxResponseBytes: new TextEncoder().encode(text).byteLength });
    expect(await client.listCategories()).toEqual([{ id: 'cat_1', name: 'Guides', slug: 'guides' }]);
  });

  it.each([301, 302, 307, 308])(
    'returns kind bad_response for a %i to another host and never follows it',
    async (status) => {
      const { client, calls, sleeps } = setup(
        () => new Response(null, { status, headers: { Location: 'https://collector.evil.example/steal' } }),
      );
      const error = await failureOf(client.listCategories());
      expect(error.kind).toBe('bad_response');
      expect(error.status).toBe(status);
      expect(calls).toHaveLength(1);
      expect(calls[0]?.url.host).toBe('newsletter.test');
      expect(sleeps).toEqual([]);
    },
  );

  it('retries the POST of createSubscriber at most once on a 5xx', async () => {
    const { client, calls, sleeps } = setup(() => jsonResponse(errorBody('INTERNAL'), 503));
    const error = await failureOf(client.createSubscriber(SUBSCRIBER_BODY));
    expect(error.kind).toBe('unavailable');
    expect(calls).toHaveLength(2);
    expect(calls.map((call) => call.method)).toEqual(['POST', 'POST']);
    expect(sleeps).toEqual([50]);
  });

  it('retries the POST of createSubscriber at most once on a connection reset', async () => {
    const { client, calls } = setup(() => Promise.reject(connectionReset()));
    expect((await failureOf(client.createSubscriber(SUBSCRIBER_BODY))).kind).toBe('unavailable');
    expect(calls).toHaveLength(2);
  });

  it('subscribes after one retried POST when a 5xx is followed by success', async () => {
    const { client, calls } = setup((_call, index) =>
      index === 0 ? jsonResponse(errorBody('INTERNAL'), 502) : jsonResponse({ ok: true, data: { id: 'sub_1', status: 'subscribed' } }),
    );
    expect(await client.createSubscriber(SUBSCRIBER_BODY)).toEqual({ id: 'sub_1', status: 'subscribed' });
    expect(calls).toHaveLength(2);
    expect(calls[1]?.body).toBe(calls[0]?.body);
  });

  it('does not retry a timed-out POST', async () => {
    const { client, calls } = setup(() => Promise.reject(timeoutError()));
    expect((await failureOf(client.createSubscriber(SUBSCRIBER_BODY))).kind).toBe('timeout');
    expect(calls).toHaveLength(1);
  });
});

describe('upstream client and 429', () => {
  it('returns kind rate_limited with retryAfterSeconds from Retry-After, and does not retry', async () => {
    const { client, calls, sleeps } = setup(() => jsonResponse(errorBody('RATE_LIMITED'), 429, { 'Retry-After': '120' }));
    const error = await failureOf(client.listCategories());
    expect(error.kind).toBe('rate_limited');
    expect(error.retryAfterSeconds).toBe(120);
    expect(calls).toHaveLength(1);
    expect(sleeps).toEqual([]);
  });

  it('holds off every call within the Retry-After window without calling fetch, then resumes', async () => {
    const { client, calls, clock } = setup((_call, index) =>
      index === 0 ? jsonResponse(errorBody('RATE_LIMITED'), 429, { 'Retry-After': '120' }) : categoriesOk(),
    );
    await failureOf(client.listCategories());
    expect(calls).toHaveLength(1);

    clock.advance(45_000);
    const heldOff = await failureOf(client.getIssueBySlug('another-operation'));
    expect(heldOff.kind).toBe('rate_limited');
    expect(heldOff.retryAfterSeconds).toBe(75);
    const heldOffPost = await failureOf(client.createSubscriber(SUBSCRIBER_BODY));
    expect(heldOffPost.kind).toBe('rate_limited');
    expect(calls).toHaveLength(1);

    clock.advance(75_001);
    expect(await client.listCategories()).toHaveLength(1);
    expect(calls).toHaveLength(2);
  });

  it('reads Retry-After given as an HTTP date', async () => {
    const clock = createFakeClock();
    const retryAt = new Date(clock.now() + 90_000).toUTCString();
    const { client, calls } = setup(() => jsonResponse(errorBody('RATE_LIMITED'), 429, { 'Retry-After': retryAt }), {
      now: clock.now,
    });
    const error = await failureOf(client.listCategories());
    expect(error.kind).toBe('rate_limited');
    expect(error.retryAfterSeconds).toBe(90);
    clock.advance(89_000);
    expect((await failureOf(client.listCategories())).retryAfterSeconds).toBe(1);
    expect(calls).toHaveLength(1);
  });

  it('holds off for 30 seconds when a 429 carries no Retry-After', async () => {
    const { client } = setup(() => jsonResponse(errorBody('RATE_LIMITED'), 429));
    expect((await failureOf(client.listCategories())).retryAfterSeconds).toBe(30);
  });

  it('caps a very long Retry-After at 600 seconds', async () => {
    const { client } = setup(() => jsonResponse(errorBody('RATE_LIMITED'), 429, { 'Retry-After': '86400' }));
    expect((await failureOf(client.listCategories())).retryAfterSeconds).toBe(600);
  });

  it('does not retry a 429 on the POST either', async () => {
    const { client, calls } = setup(() => jsonResponse(errorBody('RATE_LIMITED'), 429, { 'Retry-After': '5' }));
    expect((await failureOf(client.createSubscriber(SUBSCRIBER_BODY))).kind).toBe('rate_limited');
    expect(calls).toHaveLength(1);
  });
});

describe('upstream client error messages', () => {
  const hostileMessage = `${UPSTREAM_SENTENCE}; your key ${TEST_API_KEY} is wrong`;
  const cases: readonly [string, FetchHandler][] = [
    ...[400, 401, 403, 404, 409, 422, 429, 500, 501, 503].map(
      (status): [string, FetchHandler] => [`a ${status} error envelope`, () => jsonResponse(errorBody('SOME_CODE', hostileMessage), status)],
    ),
    ['a 200 with the wrong shape', () => jsonResponse({ ok: true, data: [hostileMessage] })],
    ['a 200 HTML page', () => new Response(`<p>${hostileMessage}</p>`, { status: 200 })],
    ['a redirect', () => new Response(hostileMessage, { status: 302, headers: { Location: `https://evil.example/?k=${TEST_API_KEY}` } })],
    ['a network error', () => Promise.reject(new TypeError(hostileMessage))],
    ['a timeout', () => Promise.reject(new DOMException(hostileMessage, 'TimeoutError'))],
  ];

  it.each(cases)('never puts the API key or the upstream text in the message for %s', async (_label, handler) => {
    const { client } = setup(handler);
    for (const error of [await failureOf(client.listCategories()), await failureOf(client.createSubscriber(SUBSCRIBER_BODY))]) {
      for (const text of [error.message, String(error), error.stack ?? '', error.upstreamCode ?? '']) {
        expect(text).not.toContain(TEST_API_KEY);
        expect(text).not.toContain('purple walrus');
      }
    }
  });

  it('keeps a well-formed upstream code for the logs, and drops one that is free text', async () => {
    const wellFormed = setup(() => jsonResponse(errorBody('UNAUTHORIZED'), 401));
    expect((await failureOf(wellFormed.client.listCategories())).upstreamCode).toBe('UNAUTHORIZED');
    const freeText = setup(() => jsonResponse(errorBody(`bad key ${TEST_API_KEY}`), 401));
    expect((await failureOf(freeText.client.listCategories())).upstreamCode).toBeUndefined();
  });
});

describe('upstream client URL building with hostile slugs', () => {
  it.each([
    ['..', '..'],
    ['../x', '../x'],
    ['a/b', 'a/b'],
    ['%2e%2e', '%2e%2e'],
    ['a%2Fb', 'a%2Fb'],
    ['an empty slug', ''],
    ['a 201-character slug', 'a'.repeat(201)],
    ['a space', 'a b'],
    ['a non-ASCII letter', 'ä'],
    ['a query', 'a?status=draft'],
    ['a fragment', 'a#b'],
    ['a backslash', 'a\\b'],
    ['a leading hyphen', '-a'],
    ['a trailing underscore', 'a_'],
    ['a dot', 'a.b'],
    ['a newline', 'a\nb'],
  ])('rejects %s with kind validation and makes no upstream call', async (_label, slug) => {
    const { client, calls } = setup(() => jsonResponse({ ok: true, data: upstreamIssue(1) }));
    const error = await failureOf(client.getIssueBySlug(slug));
    expect(error.kind).toBe('validation');
    expect(calls).toHaveLength(0);
  });

  it.each(['a', 'A1', 'what-to-sow_in-March', `a${'b'.repeat(198)}c`])(
    'requests the valid slug %s under the base path',
    async (slug) => {
      const { client, calls } = setup(() => jsonResponse({ ok: true, data: upstreamIssue(1) }));
      await client.getIssueBySlug(slug);
      expect(calls).toHaveLength(1);
      expect(calls[0]?.url.origin).toBe('https://newsletter.test');
      expect(calls[0]?.url.pathname).toBe(`/v1/newsletter/issues/by-slug/${encodeURIComponent(slug)}`);
      expect(calls[0]?.url.search).toBe('');
    },
  );
});

// getIssueBySlug's SLUG_PATTERN stops every hostile slug first, so these call the builder
// directly: its own refusal is the last line of defence and must hold on its own.
describe('createUpstreamUrlBuilder', () => {
  /** Builds, or returns the UpstreamError the builder threw. */
  function attempt(baseUrl: string, segments: string[]): URL | UpstreamError {
    try {
      return createUpstreamUrlBuilder(baseUrl)(segments);
    } catch (error) {
      if (error instanceof UpstreamError) return error;
      throw error;
    }
  }

  it.each([
    ['..', ['newsletter', 'issues', 'by-slug', '..']],
    ['.', ['newsletter', 'issues', 'by-slug', '.']],
    ['.. as the first segment', ['..', 'newsletter', 'categories']],
    ['.. twice, past the base path', ['newsletter', '..', '..', 'admin']],
  ])('refuses a dot segment (%s) that would leave the path we meant, with kind validation', (_label, segments) => {
    const result = attempt(TEST_BASE_URL, segments);
    expect(result).toBeInstanceOf(UpstreamError);
    expect((result as UpstreamError).kind).toBe('validation');
    expect((result as UpstreamError).message).toMatch(/outside the configured base path/);
  });

  it.each([
    ['https://newsletter.test/v1', 'without a trailing slash'],
    ['https://newsletter.test/v1/', 'with a trailing slash'],
  ])('refuses an empty segment under a base URL %s', (baseUrl) => {
    const result = attempt(baseUrl, ['newsletter', 'issues', 'by-slug', '']);
    expect(result).toBeInstanceOf(UpstreamError);
    expect((result as UpstreamError).kind).toBe('validation');
  });

  it.each([
    ['a/b', `${TEST_BASE_URL}/newsletter/issues/by-slug/a%2Fb`],
    ['%2e%2e', `${TEST_BASE_URL}/newsletter/issues/by-slug/%252e%252e`],
    ['../x', `${TEST_BASE_URL}/newsletter/issues/by-slug/..%2Fx`],
    ['a?status=draft#top', `${TEST_BASE_URL}/newsletter/issues/by-slug/a%3Fstatus%3Ddraft%23top`],
    ['a\\b', `${TEST_BASE_URL}/newsletter/issues/by-slug/a%5Cb`],
    ['//evil.example', `${TEST_BASE_URL}/newsletter/issues/by-slug/%2F%2Fevil.example`],
    ['what-to-sow_in-March', `${TEST_BASE_URL}/newsletter/issues/by-slug/what-to-sow_in-March`],
  ])('keeps the segment %j as one encoded segment under the base path', (slug, expected) => {
    const url = createUpstreamUrlBuilder(TEST_BASE_URL)(['newsletter', 'issues', 'by-slug', slug]);
    expect(url.href).toBe(expected);
  });

  it.each([
    ['https://newsletter.test/v1', 'https://newsletter.test/v1/newsletter/categories'],
    ['https://newsletter.test/v1/', 'https://newsletter.test/v1/newsletter/categories'],
    ['https://api.example.com/newsletter-api/v1//', 'https://api.example.com/newsletter-api/v1/newsletter/categories'],
    ['http://127.0.0.1:8788/v1', 'http://127.0.0.1:8788/v1/newsletter/categories'],
  ])('builds exactly the expected URL under the base URL %s', (baseUrl, expected) => {
    expect(createUpstreamUrlBuilder(baseUrl)(['newsletter', 'categories']).href).toBe(expected);
  });

  it('adds the query parameters after the path, encoded', () => {
    const url = createUpstreamUrlBuilder(TEST_BASE_URL)(['newsletter', 'issues'], { status: 'sent', q: 'a&b=c' });
    expect(url.href).toBe(`${TEST_BASE_URL}/newsletter/issues?status=sent&q=a%26b%3Dc`);
  });
});

describe('reading the whole archive', () => {
  /** An upstream whose List Issues pages through `archive` by limit and offset. */
  function pagedArchive(size: number, options: { ignoreOffset?: boolean } = {}): FetchHandler {
    const archive = Array.from({ length: size }, (_, index) => upstreamIssue(index + 1));
    return (call) => {
      const limit = Number(call.url.searchParams.get('limit'));
      const offset = options.ignoreOffset ? 0 : Number(call.url.searchParams.get('offset'));
      return jsonResponse({ ok: true, data: archive.slice(offset, offset + limit) });
    };
  }

  const pageParams = (calls: { url: URL }[]) =>
    calls.map((call) => Object.fromEntries(call.url.searchParams.entries()));

  it('reads an archive of 230 issues in 2 pages of 200, at offsets 0 and 200', async () => {
    const { client, calls } = setup(pagedArchive(230));
    const issues = await client.listAllPublicIssues(5000);
    expect(issues).toHaveLength(230);
    expect(issues[0]?.id).toBe('iss_0001');
    expect(issues[229]?.id).toBe('iss_0230');
    expect(new Set(issues.map((issue) => issue.id)).size).toBe(230);
    expect(pageParams(calls)).toEqual([
      { status: 'sent', isPublic: 'true', limit: '200', offset: '0' },
      { status: 'sent', isPublic: 'true', limit: '200', offset: '200' },
    ]);
  });

  it('asks once more after a full last page and stops at the empty page (400 issues: 3 calls)', async () => {
    const { client, calls } = setup(pagedArchive(400));
    expect(await client.listAllPublicIssues(5000)).toHaveLength(400);
    expect(pageParams(calls).map((params) => params.offset)).toEqual(['0', '200', '400']);
  });

  it('stops after the page that adds nothing new when the upstream ignores offset (2 calls)', async () => {
    const { client, calls } = setup(pagedArchive(1000, { ignoreOffset: true }));
    const issues = await client.listAllPublicIssues(5000);
    expect(issues).toHaveLength(200);
    expect(calls).toHaveLength(2);
  });

  it('stops at maxIssues, keeping the first ones read', async () => {
    const { client, calls } = setup(pagedArchive(1000));
    const issues = await client.listAllPublicIssues(250);
    expect(issues).toHaveLength(250);
    expect(issues[249]?.id).toBe('iss_0250');
    expect(calls).toHaveLength(2);
  });

  it('makes one call when maxIssues is reached by the first full page', async () => {
    const { client, calls } = setup(pagedArchive(1000));
    expect(await client.listAllPublicIssues(200)).toHaveLength(200);
    expect(calls).toHaveLength(1);
  });

  it('makes one call and returns nothing for an empty archive', async () => {
    const { client, calls } = setup(pagedArchive(0));
    expect(await client.listAllPublicIssues(5000)).toEqual([]);
    expect(calls).toHaveLength(1);
  });

  it('fails the whole read when a later page fails', async () => {
    const archive = pagedArchive(300);
    const { client, calls } = setup((call, index) => (index === 1 ? jsonResponse(errorBody('UNAUTHORIZED'), 401) : archive(call, index)));
    expect((await failureOf(client.listAllPublicIssues(5000))).kind).toBe('auth');
    expect(calls).toHaveLength(2);
  });

  it('keeps one copy of an issue that appears on two pages', async () => {
    const queries: ListIssuesQuery[] = [];
    const row = (n: number) => ({ id: `iss_${n}`, subject: `Issue ${n}`, status: 'sent' }) as UpstreamIssue;
    const pages = [Array.from({ length: 200 }, (_, i) => row(i)), [row(199), row(200), row(201)]];
    const issues = await readWholeArchive(async (query) => {
      queries.push(query);
      return pages[queries.length - 1] ?? [];
    }, 5000);
    expect(issues.map((issue) => issue.id)).toEqual(Array.from({ length: 202 }, (_, i) => `iss_${i}`));
    expect(queries).toEqual([
      { status: 'sent', isPublic: true, limit: 200, offset: 0 },
      { status: 'sent', isPublic: true, limit: 200, offset: 200 },
    ]);
  });
});

describe('parseRetryAfter', () => {
  const NOW = Date.UTC(2026, 0, 15, 12, 0, 0);

  it.each([
    ['delta-seconds', '120', 120],
    ['delta-seconds with surrounding spaces', ' 15 ', 15],
    ['zero, raised to one second', '0', 1],
    ['an HTTP date 90 seconds ahead', new Date(NOW + 90_000).toUTCString(), 90],
    ['an HTTP date in the past, raised to one second', 'Wed, 21 Oct 2015 07:28:00 GMT', 1],
  ])('reads %s', (_label, value, seconds) => {
    expect(parseRetryAfter(value, NOW)).toBe(seconds);
  });

  it('rounds a partial second up', () => {
    expect(parseRetryAfter(new Date(NOW + 2000).toUTCString(), NOW + 500)).toBe(2);
  });

  it.each([
    ['no header', null],
    ['an empty header', ''],
    ['a word', 'soon'],
    ['a negative number', '-5'],
    ['a fraction', '1.5'],
  ])('returns undefined for %s', (_label, value) => {
    expect(parseRetryAfter(value, NOW)).toBeUndefined();
  });
});
