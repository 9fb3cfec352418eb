import { describe, expect, it } from 'vitest';
import { UpstreamError, type UpstreamErrorKind } from '../src/core/upstream/transport.js';
import {
  UPSTREAM_HINTS,
  answerUpstreamFailure,
  readErrorFromUpstream,
  createFailureSpells,
  failureReasonOf,
} from '../src/core/upstream/failure-policy.js';
import { createFakeClock, createLogCapture } from './helpers.js';

// docs/contract.md "Errors we return": which upstream failure becomes which answer.

function failure(
  kind: UpstreamErrorKind,
  status?: number,
  extra: { retryAfterSeconds?: number; upstreamCode?: string; heldOffBy?: 'retry_after' | 'backoff' } = {},
) {
  return new UpstreamError(kind, `upstream ${kind}`, { ...(status === undefined ? {} : { status }), ...extra });
}

function summary(answer: ReturnType<typeof answerUpstreamFailure>) {
  return {
    code: answer.error?.code,
    status: answer.error?.status,
    retryAfter: answer.error?.retryAfter,
    level: answer.level,
    hint: answer.hint,
  };
}

describe('answerUpstreamFailure for a read', () => {
  it.each([
    ['auth', 401, 'UPSTREAM_ERROR', 502, 'error', UPSTREAM_HINTS.rejectedKey],
    ['not_found', 404, 'UPSTREAM_ERROR', 502, 'error', UPSTREAM_HINTS.readPathMissing],
    ['validation', 422, 'UPSTREAM_ERROR', 502, 'warn', undefined],
    ['refused', 409, 'UPSTREAM_ERROR', 502, 'warn', undefined],
    ['unavailable', 500, 'UPSTREAM_ERROR', 502, 'warn', undefined],
    ['bad_response', 200, 'UPSTREAM_ERROR', 502, 'warn', undefined],
  ] as const)('answers %s (%i) with %s %i, logged as %s', (kind, status, code, httpStatus, level, hint) => {
    expect(summary(answerUpstreamFailure(failure(kind, status), 'read'))).toEqual({
      code,
      status: httpStatus,
      retryAfter: undefined,
      level,
      hint,
    });
  });

  it('answers a rate limit with 503 and the upstream Retry-After, and a timeout with 503 after 5 s', () => {
    expect(summary(answerUpstreamFailure(failure('rate_limited', 429, { retryAfterSeconds: 42 }), 'read'))).toEqual({
      code: 'UPSTREAM_UNAVAILABLE',
      status: 503,
      retryAfter: 42,
      level: 'warn',
      hint: undefined,
    });
    expect(answerUpstreamFailure(failure('timeout'), 'read').error?.retryAfter).toBe(5);
  });

  it('keeps the upstream failure as the cause, so onError and logs can tell it apart', () => {
    const upstream = failure('auth', 401);
    expect(readErrorFromUpstream(upstream).cause).toBe(upstream);
  });
});

describe('answerUpstreamFailure for a subscribe', () => {
  it('answers a 404 with 502, logged as an error with the base-URL hint', () => {
    expect(summary(answerUpstreamFailure(failure('not_found', 404), 'subscribe'))).toEqual({
      code: 'UPSTREAM_ERROR',
      status: 502,
      retryAfter: undefined,
      level: 'error',
      hint: UPSTREAM_HINTS.subscribePathMissing,
    });
  });

  it.each([
    ['refused', 409, undefined],
    ['refused', 410, undefined],
    ['refused', 418, undefined],
    ['not_found', 410, 'NOT_FOUND'],
    ['validation', 422, 'SUBSCRIBER_BLOCKED'],
    ['validation', 422, 'ALREADY_SUBSCRIBED'],
  ] as const)('answers %s (%i %s) as a success: no error, so the form cannot tell who is on the list', (kind, status, upstreamCode) => {
    const extra = upstreamCode ? { upstreamCode } : {};
    expect(summary(answerUpstreamFailure(failure(kind, status, extra), 'subscribe'))).toEqual({
      code: undefined,
      status: undefined,
      retryAfter: undefined,
      level: 'info',
      hint: undefined,
    });
  });

  it.each([400, 403])('answers a %i as a success too, logged as a warning in case every address gets it', (status) => {
    expect(summary(answerUpstreamFailure(failure('refused', status), 'subscribe'))).toEqual({
      code: undefined,
      status: undefined,
      retryAfter: undefined,
      level: 'warn',
      hint: UPSTREAM_HINTS.subscribeRefused,
    });
  });

  it('answers a 422 with the documented VALIDATION_ERROR, or with no code, as the address’s form', () => {
    for (const extra of [{ upstreamCode: 'VALIDATION_ERROR' }, {}]) {
      expect(answerUpstreamFailure(failure('validation', 422, extra), 'subscribe').error?.status).toBe(422);
    }
  });

  it('answers a 422 as the visitor’s input, in our own words', () => {
    const { error } = answerUpstreamFailure(failure('validation', 422), 'subscribe');
    expect(error).toMatchObject({
      code: 'VALIDATION_ERROR',
      status: 422,
      message: 'The newsletter service did not accept this subscription.',
      details: [{ path: 'email', message: 'was not accepted' }],
    });
  });

  it('answers a rejected key with 502 logged as an error naming the key, and a busy upstream with 503 as a warning', () => {
    expect(summary(answerUpstreamFailure(failure('auth', 401), 'subscribe'))).toMatchObject({
      code: 'UPSTREAM_ERROR',
      level: 'error',
      hint: UPSTREAM_HINTS.rejectedKey,
    });
    expect(summary(answerUpstreamFailure(failure('rate_limited', 429, { retryAfterSeconds: 7 }), 'subscribe'))).toMatchObject({
      code: 'UPSTREAM_UNAVAILABLE',
      retryAfter: 7,
      level: 'warn',
    });
  });
});

describe('the hints', () => {
  it('name the variable an operator should check', () => {
    expect(UPSTREAM_HINTS.rejectedKey).toContain('NEWSLETTER_API_KEY');
    expect(UPSTREAM_HINTS.readPathMissing).toContain('NEWSLETTER_API_BASE_URL');
    expect(UPSTREAM_HINTS.subscribePathMissing).toContain('NEWSLETTER_API_BASE_URL');
  });
});

describe('failure spells', () => {
  function spells() {
    const clock = createFakeClock();
    const logs = createLogCapture(clock.now);
    return { clock, logs, spells: createFailureSpells({ log: logs.log, now: clock.now }) };
  }
  const events = (logs: ReturnType<typeof createLogCapture>) => logs.entries().map((entry) => [entry.level, entry.event]);

  it('logs a spell once when it starts and once when it ends, with its reads and length, however many loads and reads it affects', () => {
    const { clock, logs, spells: tracker } = spells();
    expect(tracker.affectedRead()).toBeUndefined();
    const startedAt = clock.now();
    tracker.loadFailed('archive', failure('unavailable', 500));
    for (let read = 0; read < 400; read += 1) {
      expect(tracker.affectedRead()).toBe('upstream_5xx');
      tracker.loadFailed('archive', failure('unavailable', 503));
      tracker.loadFailed('categories', failure('rate_limited', undefined, { retryAfterSeconds: 2, heldOffBy: 'backoff' }));
    }
    clock.advance(40_000);
    // A copy the upstream gave before the spell began (a shared copy, say) does not end it.
    tracker.loaded(startedAt - 1);
    tracker.loaded(clock.now());
    expect(tracker.affectedRead()).toBeUndefined();
    expect(logs.entries()).toEqual([
      expect.objectContaining({ level: 'warn', event: 'upstream_failure', reason: 'upstream_5xx', key: 'archive', status: 500 }),
      {
        time: expect.any(String),
        level: 'info',
        event: 'upstream_failure_ended',
        reason: 'upstream_5xx',
        endedBy: 'recovered',
        seconds: 40,
        readsAffected: 400,
        failedLoads: 801,
      },
    ]);
  });

  it('logs a rejected key at error, with the hint naming the variable', () => {
    const { logs, spells: tracker } = spells();
    tracker.loadFailed('issues', failure('auth', 401, { upstreamCode: 'UNAUTHORIZED' }));
    expect(logs.entries()).toEqual([
      expect.objectContaining({
        level: 'error',
        event: 'upstream_failure',
        key: 'issues',
        reason: 'key_refused',
        kind: 'auth',
        status: 401,
        upstreamCode: 'UNAUTHORIZED',
        hint: UPSTREAM_HINTS.rejectedKey,
      }),
    ]);
  });

  it('ends a spell when the failure changes, and starts the next one with its own line', () => {
    const { logs, spells: tracker } = spells();
    tracker.loadFailed('archive', failure('unavailable', 502));
    tracker.loadFailed('archive', failure('timeout'));
    tracker.loadFailed('archive', failure('timeout'));
    expect(logs.entries()).toEqual([
      expect.objectContaining({ event: 'upstream_failure', reason: 'upstream_5xx' }),
      expect.objectContaining({ event: 'upstream_failure_ended', reason: 'upstream_5xx', endedBy: 'timeout', failedLoads: 1 }),
      expect.objectContaining({ event: 'upstream_failure', reason: 'timeout' }),
    ]);
  });

  it("starts a 429's spell without a line of its own (the transport's upstream_hold_off line is its start), and ends it with one", () => {
    const { clock, logs, spells: tracker } = spells();
    tracker.loadFailed('archive', failure('rate_limited', 429, { retryAfterSeconds: 30 }));
    for (let read = 0; read < 500; read += 1) {
      tracker.affectedRead();
      tracker.loadFailed('archive', failure('rate_limited', undefined, { retryAfterSeconds: 30, heldOffBy: 'retry_after' }));
    }
    clock.advance(30_001);
    tracker.loaded(clock.now());
    expect(events(logs)).toEqual([['info', 'upstream_failure_ended']]);
    expect(logs.entries()[0]).toMatchObject({ reason: 'rate_limited', readsAffected: 500, seconds: 30 });
  });

  it('starts a spell with a line when the first failure it sees is a pause another instance began', () => {
    const { logs, spells: tracker } = spells();
    tracker.loadFailed('categories', failure('rate_limited', undefined, { retryAfterSeconds: 4, heldOffBy: 'backoff' }));
    expect(logs.entries()).toEqual([expect.objectContaining({ level: 'warn', event: 'upstream_failure', reason: 'backing_off' })]);
  });

  it('logs anything else as an unexpected error each time, without its message', () => {
    const { logs, spells: tracker } = spells();
    tracker.loadFailed('categories', new Error('secret detail'));
    expect(logs.entries()).toEqual([expect.objectContaining({ level: 'error', event: 'upstream_failure', kind: 'unexpected' })]);
    expect(JSON.stringify(logs.entries())).not.toContain('secret detail');
    expect(tracker.affectedRead()).toBeUndefined();
  });

  it.each([
    ['a 500', failure('unavailable', 500), 'upstream_5xx'],
    ['a 501', failure('bad_response', 501), 'upstream_5xx'],
    ['a network error', failure('unavailable'), 'unreachable'],
    ['a timeout', failure('timeout'), 'timeout'],
    ['a 429', failure('rate_limited', 429), 'rate_limited'],
    ['a read held off after a 429', failure('rate_limited', undefined, { heldOffBy: 'retry_after' }), 'rate_limited'],
    ['a read held off after failures', failure('rate_limited', undefined, { heldOffBy: 'backoff' }), 'backing_off'],
    ['a refused key', failure('auth', 401), 'key_refused'],
    ['a list path answering 404', failure('not_found', 404), 'path_missing'],
    ['a malformed answer', failure('bad_response', 200), 'bad_response'],
    ['a 409', failure('refused', 409), 'refused'],
  ] as const)('names the reason of %s as %s', (_label, error, reason) => {
    expect(failureReasonOf(error)).toBe(reason);
  });
});
