import { describe, expect, it } from 'vitest';
import { backoffPauseMs, BACKOFF_CAP_MS, createMemoryHoldOff, STREAK_FORGOTTEN_AFTER_MS } from '../../src/core/upstream/hold-off.js';
import { createFakeClock, jsonResponse, type FetchHandler } from '../helpers.js';
import { errorBody, failureOf } from './fixtures.js';
import { setupTransport as setup, THING, thingsOk } from './transport-fixtures.js';

// docs/upstream.md "Backing off a failing upstream": a failed read is followed by the next call
// after a pause that doubles with each failed round (capped at 30 s, jittered), never at once.

const failing500: FetchHandler = () => jsonResponse(errorBody('INTERNAL'), 500);

/** A hold-off store on the transport's own fake clock. */
function setupWithStore(handler: FetchHandler, overrides: Parameters<typeof setup>[1] = {}) {
  const clock = createFakeClock();
  const holdOff = createMemoryHoldOff(clock.now);
  return { ...setup(handler, { holdOff, now: clock.now, ...overrides }), clock, holdOff };
}

/** How long reads are held off from now, as the hold-off store says. */
async function pauseLeft(holdOff: ReturnType<typeof createMemoryHoldOff>, now: () => number): Promise<number> {
  return (await holdOff.state('read')).untilMs - now();
}

describe('the pause after failed reads', () => {
  it('is base × 2^(streak−1), capped at 30 s, jittered to between half and all of it', () => {
    const streaks = [1, 2, 3, 4, 5, 6, 7, 20];
    expect(streaks.map((streak) => backoffPauseMs(streak, () => 0))).toEqual([500, 1000, 2000, 4000, 8000, 15_000, 15_000, 15_000]);
    expect(streaks.map((streak) => backoffPauseMs(streak, () => 1))).toEqual([1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000]);
    expect(Math.max(...streaks.map((streak) => backoffPauseMs(streak, Math.random)))).toBeLessThanOrEqual(BACKOFF_CAP_MS);
  });

  it('holds reads off after a read fails, without calling fetch, then asks once: no retry burst while failing', async () => {
    const { transport, calls, clock } = setup(failing500);
    expect((await failureOf(transport.get())).status).toBe(500);
    // The first failure of a spell keeps its retries: a blip is not a spell.
    expect(calls).toHaveLength(3);

    const held = await failureOf(transport.get());
    expect(held).toMatchObject({ kind: 'rate_limited', heldOffBy: 'backoff', status: undefined, retryAfterSeconds: 1 });
    expect(calls).toHaveLength(3);

    clock.advance(750);
    expect((await failureOf(transport.get())).status).toBe(500);
    expect(calls).toHaveLength(4);
    expect((await failureOf(transport.get())).retryAfterSeconds).toBe(2);
    expect(calls).toHaveLength(4);
  });

  it('doubles with each failed round up to the cap, and a read that is answered ends the streak', async () => {
    let up = false;
    const { transport, calls, clock, holdOff } = setupWithStore(() => (up ? thingsOk() : jsonResponse(errorBody('INTERNAL'), 503)));
    const pauses: number[] = [];
    for (let round = 0; round < 8; round += 1) {
      await failureOf(transport.get());
      const left = await pauseLeft(holdOff, clock.now);
      pauses.push(left);
      clock.advance(left);
    }
    // random() = 0.5: three quarters of each ceiling.
    expect(pauses).toEqual([750, 1500, 3000, 6000, 12_000, 22_500, 22_500, 22_500]);
    expect(calls).toHaveLength(3 + 7);

    up = true;
    expect(await transport.get()).toHaveLength(1);
    expect((await holdOff.state('read')).streak).toBe(0);
    up = false;
    await failureOf(transport.get());
    // Back at the start: retried within the budget, then the base pause.
    expect(calls).toHaveLength(3 + 7 + 1 + 3);
    expect(await pauseLeft(holdOff, clock.now)).toBe(750);
  });

  it('counts reads that fail together as one round', async () => {
    const { transport, clock, holdOff } = setupWithStore(failing500);
    await Promise.all([failureOf(transport.get()), failureOf(transport.get()), failureOf(transport.get())]);
    expect(await holdOff.state('read')).toEqual({ untilMs: clock.now() + 750, streak: 1 });
  });

  it('lets one read at a time find out whether the upstream is back; the others wait for its answer and follow it', async () => {
    let answer!: (response: Response) => void;
    let calls = 0;
    const { transport, clock } = setup(() => {
      calls += 1;
      if (calls <= 3) return jsonResponse(errorBody('INTERNAL'), 500);
      return calls === 4 ? new Promise<Response>((resolve) => (answer = resolve)) : thingsOk();
    });
    await failureOf(transport.get());
    clock.advance(750);
    const probe = transport.get();
    const other = transport.get();
    for (let i = 0; i < 20; i += 1) await Promise.resolve();
    expect(calls).toBe(4);
    answer(thingsOk());
    expect(await probe).toHaveLength(1);
    // The probe's answer ended the streak: the read that waited goes out now, and is answered.
    expect(await other).toHaveLength(1);
    expect(calls).toBe(5);
    await Promise.all([transport.get(), transport.get()]);
    expect(calls).toBe(7);
  });

  it('holds off the reads that waited on a probe that failed, without calling the upstream for them', async () => {
    let answer!: (response: Response) => void;
    let calls = 0;
    const { transport, clock } = setup(() => {
      calls += 1;
      if (calls <= 3) return jsonResponse(errorBody('INTERNAL'), 500);
      return new Promise<Response>((resolve) => (answer = resolve));
    });
    await failureOf(transport.get());
    clock.advance(750);
    const probe = failureOf(transport.get());
    const other = failureOf(transport.get());
    for (let i = 0; i < 20; i += 1) await Promise.resolve();
    answer(jsonResponse(errorBody('INTERNAL'), 500));
    expect((await probe).kind).toBe('unavailable');
    expect(await other).toMatchObject({ kind: 'rate_limited', heldOffBy: 'backoff' });
    expect(calls).toBe(4);
  });

  it.each([
    ['a timeout', () => Promise.reject(new DOMException('slow', 'TimeoutError'))],
    ['a network error', () => Promise.reject(new TypeError('fetch failed'))],
    ['a refused key (401)', () => jsonResponse(errorBody('UNAUTHORIZED'), 401)],
    ['a 501', () => jsonResponse(errorBody('NOT_IMPLEMENTED'), 501)],
  ] as [string, FetchHandler][])('pauses reads after %s too', async (_label, handler) => {
    const { transport, calls } = setup(handler);
    await failureOf(transport.get());
    const before = calls.length;
    expect((await failureOf(transport.get())).heldOffBy).toBe('backoff');
    expect(calls).toHaveLength(before);
  });

  it.each([
    ['a not-found', () => jsonResponse(errorBody('NOT_FOUND'), 404)],
    ['a refusal (409)', () => jsonResponse(errorBody('CONFLICT'), 409)],
    ['a body of the wrong shape', () => jsonResponse({ ok: true, data: 'no list' })],
  ] as [string, FetchHandler][])(
    'does not pause after %s, which is about one resource: the next read goes out at once',
    async (_label, handler) => {
      const { transport, calls } = setup(handler);
      await failureOf(transport.get());
      await failureOf(transport.get());
      expect(calls).toHaveLength(2);
    },
  );

  it('ends a streak on a not-found: the upstream answered', async () => {
    let status = 500;
    const { transport, clock, holdOff } = setupWithStore(() => jsonResponse(errorBody(status === 404 ? 'NOT_FOUND' : 'INTERNAL'), status));
    await failureOf(transport.get());
    clock.advance(750);
    status = 404;
    expect((await failureOf(transport.get())).kind).toBe('not_found');
    expect((await holdOff.state('read')).streak).toBe(0);
  });

  it('never pauses writes: one person’s subscribe is tried whatever the last one met', async () => {
    const { transport, calls } = setup(failing500);
    await failureOf(transport.post(THING));
    expect((await failureOf(transport.post(THING))).status).toBe(500);
    // Each subscribe keeps its one repeat.
    expect(calls).toHaveLength(4);
  });

  it('forgets a streak ten minutes after its last failure: the next failure starts again, with its retries', async () => {
    const { transport, calls, clock, holdOff } = setupWithStore(failing500);
    await failureOf(transport.get());
    clock.advance(750);
    await failureOf(transport.get());
    expect((await holdOff.state('read')).streak).toBe(2);
    clock.advance(STREAK_FORGOTTEN_AFTER_MS + 1);
    expect((await holdOff.state('read')).streak).toBe(0);
    await failureOf(transport.get());
    expect(calls).toHaveLength(3 + 1 + 3);
    expect(await pauseLeft(holdOff, clock.now)).toBe(750);
  });

  it('waits out a pause no longer than it is told to wait (check), then asks', async () => {
    const { transport, calls, sleeps } = setup(failing500, { waitWhenHeldOffMs: 10_000 });
    await failureOf(transport.get());
    await failureOf(transport.get());
    // Two retries of the first read, then the pause waited before the second: one call.
    expect(sleeps).toEqual([50, 100, 750]);
    expect(calls).toHaveLength(4);
  });
});
