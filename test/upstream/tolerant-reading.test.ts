import { describe, it, expect } from 'vitest';
import { createLogCapture, jsonResponse } from '../helpers.js';
import { failureOf, firstListPage, setupClient, SUBSCRIBER_BODY, upstreamCategory, upstreamIssue, UPSTREAM_SENTENCE } from './fixtures.js';

/** The real client over a scripted upstream, logging into a capture. */
function clientAnswering(respond: () => Response) {
  const logs = createLogCapture();
  const { client, calls } = setupClient(respond, { log: logs.log });
  return { client, calls, logs };
}

describe('reading a list row by row', () => {
  it('drops a row that fails its schema, serves the rest, and names its id in one warn line, never its content', async () => {
    const rows = [upstreamIssue(1), upstreamIssue(2, { subject: null, previewText: UPSTREAM_SENTENCE }), upstreamIssue(3)];
    const { client, logs } = clientAnswering(() => jsonResponse({ ok: true, data: rows }));
    const issues = await firstListPage(client);
    expect(issues.map((issue) => issue.id)).toEqual(['iss_0001', 'iss_0003']);
    expect(logs.entries()).toEqual([
      expect.objectContaining({ level: 'warn', event: 'upstream_rows_dropped', operation: 'listIssues', count: 1, ids: 'iss_0002' }),
    ]);
    expect(logs.lines.join('\n')).not.toContain(UPSTREAM_SENTENCE);
  });

  it('counts a dropped row whose id is not a plain short id without naming it', async () => {
    const rows = [upstreamIssue(1, { id: 42 }), upstreamIssue(2, { id: `<script>${'x'.repeat(80)}`, subject: 7 })];
    const { client, logs } = clientAnswering(() => jsonResponse({ ok: true, data: rows }));
    expect(await firstListPage(client)).toEqual([]);
    expect(logs.entries()[0]).toMatchObject({ event: 'upstream_rows_dropped', count: 2 });
    expect(logs.entries()[0]).not.toHaveProperty('ids');
  });

  it('drops a category without a slug and keeps the others', async () => {
    const { client, logs } = clientAnswering(() =>
      jsonResponse({ ok: true, data: [{ id: 'cat_1', name: 'Guides' }, upstreamCategory('tools', 'Tools')] }),
    );
    expect(await client.listCategories()).toEqual([{ name: 'Tools', slug: 'tools' }]);
    expect(logs.entries()[0]).toMatchObject({ event: 'upstream_rows_dropped', operation: 'listCategories', count: 1, ids: 'cat_1' });
  });

  it('drops a category whose slug breaks the slug rule (it could not be linked) and counts it in the one warn line', async () => {
    const rows = [
      upstreamCategory('c&d', 'Cats & Dogs'),
      upstreamCategory('tools', 'Tools'),
      { id: 'cat_2', name: 'Guides' },
      upstreamCategory('a/b', 'Slash'),
    ];
    const { client, logs } = clientAnswering(() => jsonResponse({ ok: true, data: rows }));
    expect(await client.listCategories()).toEqual([{ name: 'Tools', slug: 'tools' }]);
    // `cat_c&d` and `cat_a/b` are not plain ids: counted, not named.
    expect(logs.entries()).toEqual([
      expect.objectContaining({ level: 'warn', event: 'upstream_rows_dropped', operation: 'listCategories', count: 3, ids: 'cat_2' }),
    ]);
  });

  it('never validates fields it does not show: extra fields, and null in internal fields', async () => {
    const row = upstreamIssue(1, { workspaceId: null, stats: null, createdBy: null, audience: 'everyone', brandNew: [1, 2] });
    const { client, logs } = clientAnswering(() => jsonResponse({ ok: true, data: [row] }));
    expect(await firstListPage(client)).toHaveLength(1);
    expect(logs.lines).toEqual([]);
  });

  it('still fails a single issue by slug that is malformed (our 502)', async () => {
    const { client } = clientAnswering(() => jsonResponse({ ok: true, data: upstreamIssue(3, { subject: null }) }));
    expect((await failureOf(client.getIssueBySlug('issue-3'))).kind).toBe('bad_response');
  });
});

describe('states the upstream documentation does not list', () => {
  it('accepts an issue in a new state and tells the owner once per process, at info', async () => {
    const { client, logs } = clientAnswering(() => jsonResponse({ ok: true, data: [upstreamIssue(1, { status: 'archived' })] }));
    expect(await firstListPage(client)).toHaveLength(1);
    await firstListPage(client);
    expect(logs.entries()).toEqual([
      expect.objectContaining({ level: 'info', event: 'upstream_unknown_status', resource: 'issue', status: 'archived' }),
    ]);
  });

  it('says nothing about the documented states', async () => {
    const { client, logs } = clientAnswering(() =>
      jsonResponse({ ok: true, data: [upstreamIssue(1), upstreamIssue(2, { status: 'draft' })] }),
    );
    await firstListPage(client);
    expect(logs.lines).toEqual([]);
  });
});

describe('a subscription the upstream accepted', () => {
  it.each([
    ['a pending subscriber (double opt-in)', { id: 'sub_1', status: 'pending' }],
    ['a subscriber record without fields', {}],
    ['no record at all', null],
  ])('is a success with %s', async (_label, data) => {
    const { client } = clientAnswering(() => jsonResponse({ ok: true, data }));
    await expect(client.createSubscriber(SUBSCRIBER_BODY)).resolves.toBeDefined();
  });

  it('logs a new subscriber state once per process, at info', async () => {
    const { client, logs } = clientAnswering(() => jsonResponse({ ok: true, data: { status: 'pending' } }));
    await client.createSubscriber(SUBSCRIBER_BODY);
    await client.createSubscriber(SUBSCRIBER_BODY);
    expect(logs.entries()).toEqual([
      expect.objectContaining({ level: 'info', event: 'upstream_unknown_status', resource: 'subscriber', status: 'pending' }),
    ]);
  });

  it.each([
    ['a body without the success envelope', () => jsonResponse({ data: { status: 'subscribed' } })],
    ['a body that is not JSON', () => new Response('<html>ok</html>', { status: 200, headers: { 'Content-Type': 'text/html' } })],
  ])('is a bad_response only for %s', async (_label, respond) => {
    const { client } = clientAnswering(respond);
    expect((await failureOf(client.createSubscriber(SUBSCRIBER_BODY))).kind).toBe('bad_response');
  });
});
