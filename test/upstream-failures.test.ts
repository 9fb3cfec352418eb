import { describe, expect, it } from 'vitest';
import { UpstreamError, type UpstreamErrorKind } from '../src/core/upstream/transport.js';
import { UPSTREAM_HINTS, answerUpstreamFailure, logReadFailure, readErrorFromUpstream } from '../src/core/upstream/failure-policy.js';
import { createFakeClock, createLogCapture } from './helpers.js';

// docs/contract.md "Errors we return": which upstream failure becomes which answer.

function failure(kind: UpstreamErrorKind, status?: number, extra: { retryAfterSeconds?: number; upstreamCode?: string } = {}) {
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

describe('logReadFailure', () => {
  it('logs an upstream failure once with its kind, status, code, level and hint', () => {
    const logs = createLogCapture(createFakeClock().now);
    logReadFailure(logs.log, failure('auth', 401, { upstreamCode: 'UNAUTHORIZED' }), { key: 'issues', during: 'cache load' });
    expect(logs.entries()).toEqual([
      expect.objectContaining({
        level: 'error',
        event: 'upstream_failure',
        key: 'issues',
        during: 'cache load',
        kind: 'auth',
        status: 401,
        upstreamCode: 'UNAUTHORIZED',
        hint: UPSTREAM_HINTS.rejectedKey,
      }),
    ]);
  });

  it('logs anything else as an unexpected error without its message', () => {
    const logs = createLogCapture(createFakeClock().now);
    logReadFailure(logs.log, new Error('secret detail'), { key: 'categories' });
    expect(logs.entries()).toEqual([expect.objectContaining({ level: 'error', event: 'upstream_failure', kind: 'unexpected' })]);
    expect(JSON.stringify(logs.entries())).not.toContain('secret detail');
  });
});
