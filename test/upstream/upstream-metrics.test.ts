import { describe, expect, it } from 'vitest';
import { UpstreamError } from '../../src/core/upstream/transport.js';
import { jsonResponse } from '../helpers.js';
import { createMetricsRecorder } from '../metrics-recorder.js';
import { categoriesOk, errorBody, failureOf, setupClient, SUBSCRIBER_BODY } from './fixtures.js';

describe('upstream client metrics', () => {
  it('reports one call per operation, with its time and, when it failed, the error it threw', async () => {
    const { metrics, of } = createMetricsRecorder();
    const { client } = setupClient(
      (call) => (call.url.pathname.endsWith('/categories') ? categoriesOk() : jsonResponse(errorBody('NOT_FOUND'), 404)),
      {
        metrics,
      },
    );
    await client.listCategories();
    const missing = await failureOf(client.getIssueBySlug('no-such-issue'));
    const calls = of('upstreamCall');
    expect(calls.map(([operation]) => operation)).toEqual(['list_categories', 'get_issue_by_slug']);
    expect(calls[0]).toHaveLength(2);
    expect(calls[1]![2]).toBe(missing);
    for (const [, seconds] of calls) expect(seconds).toBeGreaterThanOrEqual(0);
  });

  it('reports each retry, and a call made with retries once, when it ends', async () => {
    const { metrics, of } = createMetricsRecorder();
    const { client, calls } = setupClient((_call, index) => (index < 2 ? jsonResponse(errorBody('UNAVAILABLE'), 503) : categoriesOk()), {
      metrics,
    });
    await client.listCategories();
    expect(calls).toHaveLength(3);
    expect(of('upstreamRetry')).toEqual([[], []]);
    expect(of('upstreamCall')).toEqual([['list_categories', expect.any(Number)]]);
  });

  it('reports the hold-off a 429 adds, counting overlapping hold-offs once, and a held-off call by its error', async () => {
    const { metrics, of } = createMetricsRecorder();
    const { client, clock } = setupClient(
      (_call, index) => jsonResponse(errorBody('RATE_LIMITED'), 429, { 'Retry-After': index === 0 ? '120' : '60' }),
      {
        metrics,
      },
    );
    await failureOf(client.createSubscriber(SUBSCRIBER_BODY));
    expect(of('upstreamHoldOff')).toEqual([[120]]);
    clock.advance(30_000);
    // A 429 on Create Subscriber holds off Create Subscriber (reads are held off apart).
    const heldOff = await failureOf(client.createSubscriber(SUBSCRIBER_BODY));
    expect(heldOff).toBeInstanceOf(UpstreamError);
    expect(heldOff.status).toBeUndefined();
    expect(of('upstreamCall').map(([operation, , error]) => [operation, (error as UpstreamError).status])).toEqual([
      ['create_subscriber', 429],
      ['create_subscriber', undefined],
    ]);
    // 121 s later a second 429 asks for 60 s more: all of it new hold-off time.
    clock.advance(91_000);
    await failureOf(client.createSubscriber(SUBSCRIBER_BODY));
    expect(of('upstreamHoldOff')).toEqual([[120], [60]]);
  });
});
