import { describe, it, expect, vi } from 'vitest';
import { isWorkerd, jsonResponse, TEST_API_KEY } from '../helpers.js';
import { connectionReset, errorBody, failureOf, timeoutError } from './fixtures.js';
import { setupTransport as setup, THING, THING_URL, thingsOk } from './transport-fixtures.js';

describe('transport request shape', () => {
  it('calls exactly the URL it is given, with the configured headers and Accept, and no body on a GET', async () => {
    const { transport, calls } = setup(thingsOk);
    await transport.get();
    expect(calls).toHaveLength(1);
    expect(calls[0]?.url.href).toBe(THING_URL.href);
    expect([...(calls[0]?.headers.entries() ?? [])]).toEqual([
      ['accept', 'application/json'],
      ['authorization', `Bearer ${TEST_API_KEY}`],
    ]);
    expect(calls[0]?.body).toBeUndefined();
  });

  it('sends a POST body as JSON with Content-Type: application/json', async () => {
    const { transport, calls } = setup(thingsOk);
    await transport.post(THING);
    expect(calls[0]?.method).toBe('POST');
    expect(calls[0]?.headers.get('content-type')).toBe('application/json');
    expect(JSON.parse(calls[0]?.body ?? 'null')).toEqual(THING);
  });

  it('asks fetch not to follow redirects and passes a live abort signal on every call', async () => {
    const { transport, calls } = setup(thingsOk);
    await transport.get();
    await transport.get();
    await transport.post(THING);
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
      const { transport, calls } = setup(thingsOk, { timeoutMs: 1234 });
      await transport.get();
      expect(spy).toHaveBeenCalledTimes(1);
      expect(spy).toHaveBeenCalledWith(1234);
      expect(calls[0]?.signal).toBe(spy.mock.results[0]?.value);
    } finally {
      spy.mockRestore();
    }
  });
});

describe('transport results', () => {
  it('accepts any 2xx status for a success', async () => {
    const { transport } = setup(() => jsonResponse({ ok: true, data: [{ id: 'thing_9' }] }, 201));
    expect(await transport.post(THING)).toEqual([{ id: 'thing_9' }]);
  });
});

describe('transport failures', () => {
  it('returns kind timeout and does not retry when the upstream times out', async () => {
    const { transport, calls, sleeps } = setup(() => Promise.reject(timeoutError()));
    const error = await failureOf(transport.get());
    expect(error.kind).toBe('timeout');
    expect(calls).toHaveLength(1);
    expect(sleeps).toEqual([]);
  });

  it('retries a connection reset twice with growing backoff, then returns kind unavailable', async () => {
    const { transport, calls, sleeps } = setup(() => Promise.reject(connectionReset()));
    const error = await failureOf(transport.get());
    expect(error.kind).toBe('unavailable');
    expect(calls).toHaveLength(3);
    // random() = 0.5 over ceilings of 100 ms and 200 ms: full jitter, doubling per attempt.
    expect(sleeps).toEqual([50, 100]);
  });

  it('succeeds after one retry when a connection reset is followed by an answer', async () => {
    const { transport, calls, sleeps } = setup((_call, index) => (index === 0 ? Promise.reject(connectionReset()) : thingsOk()));
    expect(await transport.get()).toHaveLength(1);
    expect(calls).toHaveLength(2);
    expect(sleeps).toEqual([50]);
  });

  it('succeeds after one retry with the backoff delay recorded when a 5xx is followed by success', async () => {
    const { transport, calls, sleeps } = setup((_call, index) => (index === 0 ? jsonResponse(errorBody('INTERNAL'), 503) : thingsOk()));
    expect(await transport.get()).toEqual([{ id: 'thing_1' }]);
    expect(calls).toHaveLength(2);
    expect(sleeps).toEqual([50]);
  });

  it('gives up after 3 calls in total and returns kind unavailable when every call is a 5xx', async () => {
    const statuses = [500, 502, 504];
    const { transport, calls, sleeps } = setup((_call, index) => jsonResponse(errorBody('INTERNAL'), statuses[index] ?? 500));
    const error = await failureOf(transport.get());
    expect(error.kind).toBe('unavailable');
    expect(error.status).toBe(504);
    expect(calls).toHaveLength(3);
    expect(sleeps).toEqual([50, 100]);
  });

  it.each([501, 505])('does not retry a %i, which will not get better, and returns kind bad_response', async (status) => {
    const { transport, calls, sleeps } = setup(() => jsonResponse(errorBody('NOT_IMPLEMENTED'), status));
    const error = await failureOf(transport.get());
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
    const { transport, calls, sleeps } = setup(() => jsonResponse(errorBody('SOME_CODE'), status));
    const error = await failureOf(transport.get());
    expect(error.kind).toBe(kind);
    expect(error.status).toBe(status);
    expect(calls).toHaveLength(1);
    expect(sleeps).toEqual([]);
  });

  it('maps the upstream code NOT_FOUND to kind not_found at another 4xx status', async () => {
    const { transport } = setup(() => jsonResponse(errorBody('NOT_FOUND'), 400));
    const error = await failureOf(transport.get());
    expect(error.kind).toBe('not_found');
    expect(error.upstreamCode).toBe('NOT_FOUND');
  });

  it('decides by the status alone and keeps no code when the error body is not the upstream envelope', async () => {
    const { transport } = setup(() => jsonResponse({ error: { code: 'NOT_FOUND', message: 'gone' } }, 400));
    const error = await failureOf(transport.get());
    expect(error.kind).toBe('refused');
    expect(error.upstreamCode).toBeUndefined();
  });

  it('keeps the code of a refusal that is not NOT_FOUND', async () => {
    const { transport } = setup(() => jsonResponse(errorBody('SOME_CODE'), 400));
    const error = await failureOf(transport.get());
    expect(error.kind).toBe('refused');
    expect(error.upstreamCode).toBe('SOME_CODE');
  });

  it('serializes a failure with its kind first, then its details, and neither the key nor the upstream body', async () => {
    const { transport } = setup(() => jsonResponse(errorBody('RATE_LIMITED'), 429, { 'Retry-After': '7' }));
    const error = await failureOf(transport.get());
    expect(JSON.stringify(error)).toBe(
      '{"kind":"rate_limited","name":"UpstreamError","status":429,"retryAfterSeconds":7,"upstreamCode":"RATE_LIMITED"}',
    );
    expect(JSON.stringify(error)).not.toContain(TEST_API_KEY);
  });

  it('decides the kind from the status alone when the error body is not JSON', async () => {
    const { transport } = setup(() => new Response('<h1>Unauthorized</h1>', { status: 401, headers: { 'Content-Type': 'text/html' } }));
    const error = await failureOf(transport.get());
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
    ['no ok flag', () => jsonResponse({ data: [] })],
  ])('returns kind bad_response and does not retry for %s', async (_label, respond) => {
    const { transport, calls, sleeps } = setup(respond);
    const error = await failureOf(transport.get());
    expect(error.kind).toBe('bad_response');
    expect(error.status).toBe(200);
    expect(calls).toHaveLength(1);
    expect(sleeps).toEqual([]);
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
    const { transport, calls } = setup(() => new Response(body, { status: 200, headers: { 'Content-Length': '2048' } }), {
      maxResponseBytes: 1024,
    });
    const error = await failureOf(transport.get());
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
    const { transport, calls } = setup(() => new Response(body, { status: 200 }), { maxResponseBytes: 1024 });
    const error = await failureOf(transport.get());
    expect(error.kind).toBe('bad_response');
    expect(calls).toHaveLength(1);
    expect(cancelled).toBe(true);
    expect(chunksServed).toBeLessThan(100);
  });

  it('accepts a body of exactly maxResponseBytes', async () => {
    const text = JSON.stringify({ ok: true, data: [{ id: 'thing_1' }] });
    const { transport } = setup(() => new Response(text, { status: 200 }), { maxResponseBytes: new TextEncoder().encode(text).byteLength });
    expect(await transport.get()).toEqual([{ id: 'thing_1' }]);
  });

  it.each([301, 302, 307, 308])('returns kind bad_response for a %i to another host and never follows it', async (status) => {
    const { transport, calls, sleeps } = setup(
      () => new Response(null, { status, headers: { Location: 'https://collector.evil.example/steal' } }),
    );
    const error = await failureOf(transport.get());
    expect(error.kind).toBe('bad_response');
    expect(error.status).toBe(status);
    expect(calls).toHaveLength(1);
    expect(calls[0]?.url.host).toBe(THING_URL.host);
    expect(sleeps).toEqual([]);
  });
});

describe('transport POST retries', () => {
  it('repeats a POST once after a 503, as Create Subscriber is safe to repeat', async () => {
    const { transport, calls, sleeps } = setup(() => jsonResponse(errorBody('INTERNAL'), 503));
    expect((await failureOf(transport.post(THING))).kind).toBe('unavailable');
    expect(calls.map((call) => call.method)).toEqual(['POST', 'POST']);
    expect(sleeps).toEqual([50]);
  });

  it('repeats a POST once after a connection reset, and no more', async () => {
    const { transport, calls } = setup(() => Promise.reject(connectionReset()));
    expect((await failureOf(transport.post(THING))).kind).toBe('unavailable');
    expect(calls.map((call) => call.method)).toEqual(['POST', 'POST']);
  });
});
