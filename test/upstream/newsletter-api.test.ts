import { describe, it, expect } from 'vitest';
import { createUpstreamUrlBuilder } from '../../src/core/upstream/newsletter-api.js';
import { UpstreamError } from '../../src/core/upstream/transport.js';
import { jsonResponse, TEST_API_KEY, TEST_BASE_URL } from '../helpers.js';
import {
  categoriesOk,
  connectionReset,
  errorBody,
  failureOf,
  firstListPage,
  setupClient,
  SUBSCRIBER_BODY,
  timeoutError,
  upstreamCategory,
  upstreamIssue,
} from './fixtures.js';

describe('upstream client request shape', () => {
  it('sends only the Bearer key and Accept: application/json on a GET, with no body', async () => {
    const { client, calls } = setupClient(categoriesOk);
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
    const { client, calls } = setupClient(() => jsonResponse({ ok: true, data: { id: 'sub_1', status: 'subscribed' } }));
    await client.createSubscriber(SUBSCRIBER_BODY);
    expect(calls[0]?.method).toBe('POST');
    expect([...(calls[0]?.headers.entries() ?? [])]).toEqual([
      ['accept', 'application/json'],
      ['authorization', `Bearer ${TEST_API_KEY}`],
      ['content-type', 'application/json'],
    ]);
    expect(JSON.parse(calls[0]?.body ?? 'null')).toEqual(SUBSCRIBER_BODY);
  });

  it('lists issues at /newsletter/issues with status, isPublic and the assumed limit and offset parameters', async () => {
    const { client, calls } = setupClient(() => jsonResponse({ ok: true, data: [] }));
    await client.listAllPublicIssues(1000);
    await firstListPage(client);
    expect(calls.map((call) => call.url.href)).toEqual([
      `${TEST_BASE_URL}/newsletter/issues?status=sent&isPublic=true&limit=200&offset=0`,
      `${TEST_BASE_URL}/newsletter/issues?status=sent&isPublic=true&limit=10&offset=0`,
    ]);
  });

  it('gets one issue at /newsletter/issues/by-slug/:slug', async () => {
    const { client, calls } = setupClient(() => jsonResponse({ ok: true, data: upstreamIssue(1) }));
    await client.getIssueBySlug('what-to-sow_in-March2');
    expect(calls[0]?.url.href).toBe(`${TEST_BASE_URL}/newsletter/issues/by-slug/what-to-sow_in-March2`);
  });

  it('lists categories at /newsletter/categories', async () => {
    const { client, calls } = setupClient(categoriesOk);
    await client.listCategories();
    expect(calls[0]?.url.href).toBe(`${TEST_BASE_URL}/newsletter/categories`);
  });

  it('creates a subscriber with a POST to /newsletter/subscribers', async () => {
    const { client, calls } = setupClient(() => jsonResponse({ ok: true, data: {} }));
    await client.createSubscriber(SUBSCRIBER_BODY);
    expect(calls[0]?.method).toBe('POST');
    expect(calls[0]?.url.href).toBe(`${TEST_BASE_URL}/newsletter/subscribers`);
  });

  it('keeps a base URL with a deeper path and a trailing slash, without doubling the slash', async () => {
    const { client, calls } = setupClient(categoriesOk, { baseUrl: 'https://api.example.com/newsletter-api/v1/' });
    await client.listCategories();
    expect(calls[0]?.url.href).toBe('https://api.example.com/newsletter-api/v1/newsletter/categories');
  });
});

describe('upstream client results', () => {
  it('returns the parsed issue list', async () => {
    const { client } = setupClient(() => jsonResponse({ ok: true, data: [upstreamIssue(1), upstreamIssue(2)] }));
    const issues = await firstListPage(client);
    expect(issues.map((issue) => [issue.id, issue.slug, issue.subject])).toEqual([
      ['iss_0001', 'issue-1', 'Issue 1'],
      ['iss_0002', 'issue-2', 'Issue 2'],
    ]);
  });

  it('tolerates unknown extra fields and drops them, workspace and account-set ids included', async () => {
    const { client } = setupClient(() =>
      jsonResponse({
        ok: true,
        data: upstreamIssue(7, { futureField: { nested: true }, category: upstreamCategory('tools', 'Tools') }),
        meta: { requestId: 'req_1' },
      }),
    );
    const issue = await client.getIssueBySlug('issue-7');
    expect(issue.subject).toBe('Issue 7');
    expect(issue.category).toEqual({ name: 'Tools', slug: 'tools' });
    expect(issue).not.toHaveProperty('futureField');
    expect(issue).not.toHaveProperty('workspaceId');
    expect(issue).not.toHaveProperty('accountSetId');
  });

  it('returns categories with only the fields we read', async () => {
    const { client } = setupClient(categoriesOk);
    expect(await client.listCategories()).toEqual([{ name: 'Guides', slug: 'guides' }]);
  });
});

describe('upstream client and the shape of a success body', () => {
  it.each([
    ['data as an object where an array is expected', () => jsonResponse({ ok: true, data: { issues: [upstreamIssue(1)] } })],
    ['a list without the success envelope', () => jsonResponse({ data: [upstreamIssue(1)] })],
  ])('returns kind bad_response and does not retry for %s', async (_label, respond) => {
    const { client, calls, sleeps } = setupClient(respond);
    const error = await failureOf(firstListPage(client));
    expect(error.kind).toBe('bad_response');
    expect(error.status).toBe(200);
    expect(calls).toHaveLength(1);
    expect(sleeps).toEqual([]);
  });

  it('returns kind bad_response for a single issue that is missing its subject', async () => {
    const { client } = setupClient(() => jsonResponse({ ok: true, data: upstreamIssue(3, { subject: undefined }) }));
    expect((await failureOf(client.getIssueBySlug('issue-3'))).kind).toBe('bad_response');
  });
});

describe('upstream client and the error envelope', () => {
  it('reads the code out of the documented error envelope and maps NOT_FOUND at another 4xx to not_found', async () => {
    const { client } = setupClient(() => jsonResponse(errorBody('NOT_FOUND'), 400));
    const error = await failureOf(client.getIssueBySlug('gone'));
    expect(error.kind).toBe('not_found');
    expect(error.upstreamCode).toBe('NOT_FOUND');
  });

  it('keeps no code from an error body that is not the documented envelope', async () => {
    const { client } = setupClient(() => jsonResponse({ code: 'UNAUTHORIZED' }, 401));
    const error = await failureOf(client.listCategories());
    expect(error.kind).toBe('auth');
    expect(error.upstreamCode).toBeUndefined();
  });
});

describe('upstream client retries of createSubscriber', () => {
  it('retries the POST of createSubscriber at most once on a 5xx', async () => {
    const { client, calls, sleeps } = setupClient(() => jsonResponse(errorBody('INTERNAL'), 503));
    const error = await failureOf(client.createSubscriber(SUBSCRIBER_BODY));
    expect(error.kind).toBe('unavailable');
    expect(calls).toHaveLength(2);
    expect(calls.map((call) => call.method)).toEqual(['POST', 'POST']);
    expect(sleeps).toEqual([50]);
  });

  it('retries the POST of createSubscriber at most once on a connection reset', async () => {
    const { client, calls } = setupClient(() => Promise.reject(connectionReset()));
    expect((await failureOf(client.createSubscriber(SUBSCRIBER_BODY))).kind).toBe('unavailable');
    expect(calls).toHaveLength(2);
  });

  it('subscribes after one retried POST when a 5xx is followed by success', async () => {
    const { client, calls } = setupClient((_call, index) =>
      index === 0 ? jsonResponse(errorBody('INTERNAL'), 502) : jsonResponse({ ok: true, data: { id: 'sub_1', status: 'subscribed' } }),
    );
    expect(await client.createSubscriber(SUBSCRIBER_BODY)).toEqual({ status: 'subscribed' });
    expect(calls).toHaveLength(2);
    expect(calls[1]?.body).toBe(calls[0]?.body);
  });

  it('does not retry a timed-out POST', async () => {
    const { client, calls } = setupClient(() => Promise.reject(timeoutError()));
    expect((await failureOf(client.createSubscriber(SUBSCRIBER_BODY))).kind).toBe('timeout');
    expect(calls).toHaveLength(1);
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
    const { client, calls } = setupClient(() => jsonResponse({ ok: true, data: upstreamIssue(1) }));
    const error = await failureOf(client.getIssueBySlug(slug));
    expect(error.kind).toBe('validation');
    expect(calls).toHaveLength(0);
  });

  it.each(['a', 'A1', 'what-to-sow_in-March', `a${'b'.repeat(198)}c`])('requests the valid slug %s under the base path', async (slug) => {
    const { client, calls } = setupClient(() => jsonResponse({ ok: true, data: upstreamIssue(1) }));
    await client.getIssueBySlug(slug);
    expect(calls).toHaveLength(1);
    expect(calls[0]?.url.origin).toBe('https://newsletter.test');
    expect(calls[0]?.url.pathname).toBe(`/v1/newsletter/issues/by-slug/${encodeURIComponent(slug)}`);
    expect(calls[0]?.url.search).toBe('');
  });
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
