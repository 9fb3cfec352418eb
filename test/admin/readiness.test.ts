import { describe, expect, it } from 'vitest';
import { createReadiness } from '../../src/node/admin/admin.js';
import { upstreamOutcome } from '../../src/node/admin/prometheus.js';
import { UpstreamError } from '../../src/core/upstream/transport.js';
import { createFakeClock } from '../helpers.js';

function setup() {
  const clock = createFakeClock();
  return { clock, readiness: createReadiness({ unreadyAfterMs: 60_000, now: clock.now }) };
}

describe('readiness', () => {
  it('is not ready before the upstream has answered, unless the cache is warm', () => {
    const { readiness } = setup();
    expect(readiness.state(false)).toEqual({ ready: false, reason: 'the upstream has not answered yet' });
    expect(readiness.state(true)).toEqual({ ready: true });
  });

  it('counts a not-found or a refusal as an answer: the upstream is there', () => {
    const { readiness } = setup();
    readiness.observe('not_found');
    expect(readiness.state(false)).toEqual({ ready: true });
  });

  it('stays ready through failures shorter than the limit, and one answer ends the failing spell', () => {
    const { readiness, clock } = setup();
    readiness.observe('ok');
    readiness.observe('timeout');
    clock.advance(59_999);
    readiness.observe('unavailable');
    expect(readiness.state(false)).toEqual({ ready: true });
    readiness.observe('ok');
    clock.advance(60_000);
    readiness.observe('bad_response');
    expect(readiness.state(false)).toEqual({ ready: true });
  });

  it('is not ready once every call has failed for the limit, even with a warm cache', () => {
    const { readiness, clock } = setup();
    readiness.observe('ok');
    readiness.observe('auth');
    clock.advance(90_000);
    expect(readiness.state(true)).toEqual({ ready: false, reason: 'every upstream call has failed for 90 s' });
  });

  it('counts a 429 and a hold-off neither way', () => {
    const { readiness, clock } = setup();
    readiness.observe('rate_limited');
    readiness.observe('held_off');
    expect(readiness.state(false).ready).toBe(false);
    readiness.observe('ok');
    readiness.observe('rate_limited');
    clock.advance(120_000);
    expect(readiness.state(false).ready).toBe(true);
  });

  it('names the outcome of a call from what it threw', () => {
    expect(upstreamOutcome(undefined)).toBe('ok');
    expect(upstreamOutcome(new UpstreamError('timeout', 'slow'))).toBe('timeout');
    expect(upstreamOutcome(new UpstreamError('rate_limited', 'slow down', { status: 429 }))).toBe('rate_limited');
    expect(upstreamOutcome(new UpstreamError('rate_limited', 'holding off'))).toBe('held_off');
    expect(upstreamOutcome(new TypeError('boom'))).toBe('error');
  });
});
