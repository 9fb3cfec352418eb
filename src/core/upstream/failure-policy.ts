import { ApiError } from '../http/errors.js';
import type { Logger, LogLevel } from '../log.js';
import { NOT_FOUND_STATUS } from './assumptions.js';
import { UpstreamError } from './transport.js';

type UpstreamFailureAnswer = { error: ApiError | undefined; level: LogLevel; hint: string | undefined };

const WRONG_BASE_URL = 'NEWSLETTER_API_BASE_URL may be wrong (it must be the service root ending in /v1)';

export const UPSTREAM_HINTS = {
  rejectedKey: 'the upstream rejected NEWSLETTER_API_KEY',
  readPathMissing: `the upstream has no such path: ${WRONG_BASE_URL}`,
  subscribePathMissing: `Create Subscriber answered 404: ${WRONG_BASE_URL}`,
  subscribeRefused:
    'Create Subscriber refused this address (answered to the visitor as a success); if every address is refused so, check that NEWSLETTER_API_KEY may create subscribers',
} as const;

// docs/contract.md "Errors we return". On a read a not-found is a missing list path (unknown slugs are our 404 before this);
// on subscribe only what every address gets alike may be an error: new, subscribed and refused look the same.
export function answerUpstreamFailure(failure: UpstreamError, operation: 'read' | 'subscribe'): UpstreamFailureAnswer {
  const { kind, status } = failure;
  if (operation === 'read') {
    const hint = kind === 'auth' ? UPSTREAM_HINTS.rejectedKey : kind === 'not_found' ? UPSTREAM_HINTS.readPathMissing : undefined;
    return { error: readErrorFromUpstream(failure), level: hint ? 'error' : 'warn', hint };
  }
  if (status === NOT_FOUND_STATUS || kind === 'auth') {
    const hint = status === NOT_FOUND_STATUS ? UPSTREAM_HINTS.subscribePathMissing : UPSTREAM_HINTS.rejectedKey;
    return { error: new ApiError('UPSTREAM_ERROR', { cause: failure }), level: 'error', hint };
  }
  if (kind === 'validation' && (failure.upstreamCode === undefined || failure.upstreamCode === 'VALIDATION_ERROR')) {
    const message = 'The newsletter service did not accept this subscription.';
    const details = [{ path: 'email', message: 'was not accepted' }];
    return { error: new ApiError('VALIDATION_ERROR', { message, details, cause: failure }), level: 'warn', hint: undefined };
  }
  if (kind === 'refused' || kind === 'not_found' || kind === 'validation') {
    // A 400 or 403 to every address would lose every subscription.
    return status === 400 || status === 403
      ? { error: undefined, level: 'warn', hint: UPSTREAM_HINTS.subscribeRefused }
      : { error: undefined, level: 'info', hint: undefined };
  }
  return { error: readErrorFromUpstream(failure), level: 'warn', hint: undefined };
}

export function readErrorFromUpstream(failure: UpstreamError): ApiError {
  return failure.kind === 'rate_limited' || failure.kind === 'timeout'
    ? new ApiError('UPSTREAM_UNAVAILABLE', { retryAfter: failure.retryAfterSeconds ?? 5, cause: failure })
    : new ApiError('UPSTREAM_ERROR', { cause: failure });
}

const REASON_OF_KIND = {
  unavailable: 'unreachable',
  timeout: 'timeout',
  rate_limited: 'rate_limited',
  auth: 'key_refused',
  not_found: 'path_missing',
  bad_response: 'bad_response',
} as const satisfies Partial<Record<UpstreamError['kind'], string>>;

/** Why reads are stale or failing. `backing_off`: a pause another instance started (Redis). */
export const STALE_REASONS = ['revalidating', 'upstream_5xx', ...Object.values(REASON_OF_KIND), 'refused', 'backing_off'] as const;
export type StaleReason = (typeof STALE_REASONS)[number];
type FailureReason = Exclude<StaleReason, 'revalidating'>;

export function failureReasonOf(failure: UpstreamError): FailureReason {
  if (failure.heldOffBy === 'backoff') return 'backing_off';
  if ((failure.status ?? 0) >= 500) return 'upstream_5xx';
  return failure.kind in REASON_OF_KIND ? REASON_OF_KIND[failure.kind as keyof typeof REASON_OF_KIND] : 'refused';
}

/** Failing reads logged by the spell, not by the request: docs/upstream.md "One line per spell". */
export function createFailureSpells({ log, now }: { log: Logger; now: () => number }) {
  let spell: { reason: FailureReason; startedAt: number; reads: number; failedLoads: number } | undefined;

  function end(current: NonNullable<typeof spell>, endedBy: FailureReason | 'recovered'): void {
    spell = undefined;
    log.log('info', 'upstream_failure_ended', {
      reason: current.reason,
      endedBy,
      seconds: Math.max(0, Math.round((now() - current.startedAt) / 100) / 10),
      readsAffected: current.reads,
      failedLoads: current.failedLoads,
    });
  }

  return {
    loadFailed(key: string, failure: unknown): void {
      if (!(failure instanceof UpstreamError)) {
        // A fault of ours, logged each time, without its message (it may hold data).
        log.log('error', 'upstream_failure', { key, during: 'cache load', kind: 'unexpected' });
        return;
      }
      const reason = failureReasonOf(failure);
      if (spell && (failure.heldOffBy !== undefined || reason === spell.reason)) {
        spell.failedLoads += 1;
        return;
      }
      if (spell) end(spell, reason);
      spell = { reason, startedAt: now(), reads: 0, failedLoads: 1 };
      // A 429's spell is announced by the transport's `upstream_hold_off` line.
      if (failure.kind === 'rate_limited' && failure.status !== undefined) return;
      const { level, hint } = answerUpstreamFailure(failure, 'read');
      const { kind, status, upstreamCode, message } = failure;
      log.log(level, 'upstream_failure', { key, during: 'cache load', reason, kind, status, upstreamCode, message, hint });
    },
    loaded(fetchedAt: number): void {
      if (spell && fetchedAt >= spell.startedAt) end(spell, 'recovered');
    },
    affectedRead(): FailureReason | undefined {
      if (!spell) return undefined;
      spell.reads += 1;
      return spell.reason;
    },
  };
}

export type FailureSpells = ReturnType<typeof createFailureSpells>;
