import { describe, it, expect } from 'vitest';
import { createMemoryHoldOff } from '../../src/core/upstream/hold-off.js';
import { parseRetryAfter } from '../../src/core/upstream/transport.js';
import { createFakeClock, jsonResponse, TEST_API_KEY, type FetchHandler } from '../helpers.js';
import { errorBody, failureOf, UPSTREAM_SENTENCE } from './fixtures.js';
import { setupTransport as setup, THING, THING_URL, thingsOk } from './transport-fixtures.js';

describe('transport and 429', () => {
  it('returns kind rate_limited with retryAfterSeconds from Retry-After, and does not retry', async () => {
    const { transport, calls, sleeps } = setup(() => jsonResponse(errorBody('RATE_LIMITED'), 429, { 'Retry-After': '120' }));
    const error = await failureOf(transport.get());
    expect(error.kind).toBe('rate_limited');
    expect(error.retryAfterSeconds).toBe(120);
    expect(calls).toHaveLength(1);
    expect(sleeps).toEqual([]);
  });

  it('holds off the reads within the Retry-After window without calling fetch, then resumes', async () => {
    const { transport, calls, clock } = setup((_call, index) =>
      index === 0 ? jsonResponse(errorBody('RATE_LIMITED'), 429, { 'Retry-After': '120' }) : thingsOk(),
    );
    await failureOf(transport.get());
    expect(calls).toHaveLength(1);

    clock.advance(45_000);
    const heldOff = await failureOf(transport.get());
    expect(heldOff.kind).toBe('rate_limited');
    expect(heldOff.retryAfterSeconds).toBe(75);
    expect(calls).toHaveLength(1);

    clock.advance(75_001);
    expect(await transport.get()).toHaveLength(1);
    expect(calls).toHaveLength(2);
  });

  it('lets a POST through while reads are held off, so a read-side 429 cannot block subscribing', async () => {
    const { transport, calls } = setup((call) =>
      call.method === 'GET' ? jsonResponse(errorBody('RATE_LIMITED'), 429, { 'Retry-After': '120' }) : thingsOk(),
    );
    await failureOf(transport.get());
    expect(await transport.post(THING)).toHaveLength(1);
    expect((await failureOf(transport.get())).kind).toBe('rate_limited');
    expect(calls.map((call) => call.method)).toEqual(['GET', 'POST']);
  });

  it('holds off the POSTs after a 429 on a POST, and reads go on', async () => {
    const { transport, calls } = setup((call) =>
      call.method === 'POST' ? jsonResponse(errorBody('RATE_LIMITED'), 429, { 'Retry-After': '60' }) : thingsOk(),
    );
    await failureOf(transport.post(THING));
    const heldOff = await failureOf(transport.post(THING));
    expect(heldOff.retryAfterSeconds).toBe(60);
    expect(await transport.get()).toHaveLength(1);
    expect(calls.map((call) => call.method)).toEqual(['POST', 'GET']);
  });

  it('reports the start of a hold-off once, with the refused call and until when, however many calls it refuses', async () => {
    const starts: unknown[] = [];
    const clock = createFakeClock();
    const { transport } = setup(() => jsonResponse(errorBody('RATE_LIMITED'), 429, { 'Retry-After': '30' }), {
      now: clock.now,
      onHoldOff: (start) => starts.push(start),
    });
    await failureOf(transport.get());
    for (let refused = 0; refused < 5; refused += 1) await failureOf(transport.get());
    expect(starts).toEqual([
      { operation: 'read', call: `GET ${THING_URL.pathname}`, untilMs: clock.now() + 30_000, retryAfterSeconds: 30 },
    ]);

    clock.advance(30_001);
    await failureOf(transport.get());
    expect(starts).toHaveLength(2);
  });

  it('keeps its hold-offs in the store it is given, so another store can share them', async () => {
    const clock = createFakeClock();
    const holdOff = createMemoryHoldOff();
    holdOff.hold('read', clock.now() + 10_000);
    const { transport, calls } = setup(thingsOk, { now: clock.now, holdOff });
    expect((await failureOf(transport.get())).retryAfterSeconds).toBe(10);
    expect(await transport.post(THING)).toHaveLength(1);
    expect(calls).toHaveLength(1);
  });

  it('reads Retry-After given as an HTTP date', async () => {
    const clock = createFakeClock();
    const retryAt = new Date(clock.now() + 90_000).toUTCString();
    const { transport, calls } = setup(() => jsonResponse(errorBody('RATE_LIMITED'), 429, { 'Retry-After': retryAt }), {
      now: clock.now,
    });
    const error = await failureOf(transport.get());
    expect(error.kind).toBe('rate_limited');
    expect(error.retryAfterSeconds).toBe(90);
    clock.advance(89_000);
    expect((await failureOf(transport.get())).retryAfterSeconds).toBe(1);
    expect(calls).toHaveLength(1);
  });

  it('holds off for 30 seconds when a 429 carries no Retry-After', async () => {
    const { transport } = setup(() => jsonResponse(errorBody('RATE_LIMITED'), 429));
    expect((await failureOf(transport.get())).retryAfterSeconds).toBe(30);
  });

  it('caps a very long Retry-After at 600 seconds', async () => {
    const { transport } = setup(() => jsonResponse(errorBody('RATE_LIMITED'), 429, { 'Retry-After': '86400' }));
    expect((await failureOf(transport.get())).retryAfterSeconds).toBe(600);
  });

  it('does not retry a 429 on the POST either', async () => {
    const { transport, calls } = setup(() => jsonResponse(errorBody('RATE_LIMITED'), 429, { 'Retry-After': '5' }));
    expect((await failureOf(transport.post(THING))).kind).toBe('rate_limited');
    expect(calls).toHaveLength(1);
  });
});

describe('transport error messages', () => {
  const hostileMessage = `${UPSTREAM_SENTENCE}; your key ${TEST_API_KEY} is wrong`;
  const cases: readonly [string, FetchHandler][] = [
    ...[400, 401, 403, 404, 409, 422, 429, 500, 501, 503].map((status): [string, FetchHandler] => [
      `a ${status} error envelope`,
      () => jsonResponse(errorBody('SOME_CODE', hostileMessage), status),
    ]),
    ['a 200 with the wrong shape', () => jsonResponse({ ok: true, data: [hostileMessage] })],
    ['a 200 HTML page', () => new Response(`<p>${hostileMessage}</p>`, { status: 200 })],
    ['a redirect', () => new Response(hostileMessage, { status: 302, headers: { Location: `https://evil.example/?k=${TEST_API_KEY}` } })],
    ['a network error', () => Promise.reject(new TypeError(hostileMessage))],
    ['a timeout', () => Promise.reject(new DOMException(hostileMessage, 'TimeoutError'))],
  ];

  it.each(cases)('never puts the API key or the upstream text in the message for %s', async (_label, handler) => {
    const { transport } = setup(handler);
    for (const error of [await failureOf(transport.get()), await failureOf(transport.post(THING))]) {
      for (const text of [error.message, String(error), error.stack ?? '', error.upstreamCode ?? '']) {
        expect(text).not.toContain(TEST_API_KEY);
        expect(text).not.toContain('purple walrus');
      }
    }
  });

  it('keeps a well-formed upstream code for the logs, and drops one that is free text', async () => {
    const wellFormed = setup(() => jsonResponse(errorBody('UNAUTHORIZED'), 401));
    expect((await failureOf(wellFormed.transport.get())).upstreamCode).toBe('UNAUTHORIZED');
    const freeText = setup(() => jsonResponse(errorBody(`bad key ${TEST_API_KEY}`), 401));
    expect((await failureOf(freeText.transport.get())).upstreamCode).toBeUndefined();
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
