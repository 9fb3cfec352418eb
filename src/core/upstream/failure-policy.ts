import { ApiError } from '../http/errors.js';
import type { Logger, LogLevel } from '../log.js';
import { NOT_FOUND_STATUS } from './assumptions.js';
import { UpstreamError } from './transport.js';

/** What we were doing when the upstream failed: the same failure can mean different things. */
export type UpstreamOperation = 'read' | 'subscribe';

/** How one upstream failure is answered and logged (docs/contract.md "Errors we return"). */
export interface UpstreamFailureAnswer {
  /** The error the visitor gets; `undefined` when subscribe answers it as a success. */
  error: ApiError | undefined;
  /** `error` when the whole deployment is likely misconfigured, so an operator looks. */
  level: LogLevel;
  /** What an operator should check, when the failure points at the configuration. */
  hint: string | undefined;
}

const WRONG_BASE_URL = 'NEWSLETTER_API_BASE_URL may be wrong (it must be the service root ending in /v1)';

/** The operator hints, written once. */
export const UPSTREAM_HINTS = {
  rejectedKey: 'the upstream rejected NEWSLETTER_API_KEY',
  readPathMissing: `the upstream has no such path: ${WRONG_BASE_URL}`,
  subscribePathMissing: `Create Subscriber answered 404: ${WRONG_BASE_URL}`,
  subscribeRefused:
    'Create Subscriber refused this address (answered to the visitor as a success); if every address is refused so, check that NEWSLETTER_API_KEY may create subscribers',
} as const;

/** The documented code of Create Subscriber's input errors (docs/upstream.md "Errors"). */
const VALIDATION_CODE = 'VALIDATION_ERROR';
/** Refusals that, for every address alike, would mean the key or the request does not suit this upstream. */
const REFUSALS_WORTH_A_WARNING: ReadonlySet<number> = new Set([400, 403]);

/**
 * Maps an upstream failure to our answer (docs/contract.md "Errors we return").
 *
 * Reads: the browser never sees a 401: a rejected key is our problem (502). A 422 means we sent
 * something the upstream did not expect (502). An upstream not-found is a 502 too: an unknown
 * slug is answered as our 404 before it gets here (the reads cache it), so what is left is a list
 * path the upstream does not have, i.e. a wrong NEWSLETTER_API_BASE_URL. A rejected key or a
 * missing path takes the whole site down: logged as an error, with what to check.
 *
 * Subscribe (the table in docs/contract.md "POST /api/subscribe"): only what every address gets
 * alike may be an error, so the answer never tells new, already subscribed and refused apart. A
 * 401 (our key) and a 404 (our path) are a 502; a 429 is a 503; a 422 with the documented
 * VALIDATION_ERROR is the address's form (422, in our words). Any other refusal (409, 410, 400,
 * 403, a 422 with another code, a NOT_FOUND code: Create Subscriber's further error is not
 * shown) is answered like a new address; a 400 or 403 is logged as a warning, since every
 * address getting one would mean subscriptions are being lost.
 */
export function answerUpstreamFailure(failure: UpstreamError, operation: UpstreamOperation): UpstreamFailureAnswer {
  return operation === 'read' ? answerReadFailure(failure) : answerSubscribeFailure(failure);
}

function answerReadFailure(failure: UpstreamError): UpstreamFailureAnswer & { error: ApiError } {
  const hint =
    failure.kind === 'auth' ? UPSTREAM_HINTS.rejectedKey : failure.kind === 'not_found' ? UPSTREAM_HINTS.readPathMissing : undefined;
  return { error: transientOrUpstreamError(failure), level: hint ? 'error' : 'warn', hint };
}

function answerSubscribeFailure(failure: UpstreamError): UpstreamFailureAnswer {
  if (failure.status === NOT_FOUND_STATUS) {
    return { error: new ApiError('UPSTREAM_ERROR', { cause: failure }), level: 'error', hint: UPSTREAM_HINTS.subscribePathMissing };
  }
  if (failure.kind === 'auth') return { error: new ApiError('UPSTREAM_ERROR', { cause: failure }), level: 'error', hint: UPSTREAM_HINTS.rejectedKey };
  const inputError = failure.kind === 'validation' && (failure.upstreamCode === undefined || failure.upstreamCode === VALIDATION_CODE);
  if (failure.kind === 'refused' || failure.kind === 'not_found' || (failure.kind === 'validation' && !inputError)) {
    return REFUSALS_WORTH_A_WARNING.has(failure.status ?? 0)
      ? { error: undefined, level: 'warn', hint: UPSTREAM_HINTS.subscribeRefused }
      : { error: undefined, level: 'info', hint: undefined };
  }
  if (inputError) {
    const error = new ApiError('VALIDATION_ERROR', {
      message: 'The newsletter service did not accept this subscription.',
      details: [{ path: 'email', message: 'was not accepted' }],
      cause: failure,
    });
    return { error, level: 'warn', hint: undefined };
  }
  return { error: transientOrUpstreamError(failure), level: 'warn', hint: undefined };
}

/** A busy or slow upstream is worth retrying later (503 with Retry-After); anything else is a 502. */
function transientOrUpstreamError(failure: UpstreamError): ApiError {
  if (failure.kind === 'rate_limited' || failure.kind === 'timeout') {
    return new ApiError('UPSTREAM_UNAVAILABLE', { retryAfter: failure.retryAfterSeconds ?? 5, cause: failure });
  }
  return new ApiError('UPSTREAM_ERROR', { cause: failure });
}

/** The visitor's error for a failed read (onError renders it; the failure was logged where it loaded). */
export function readErrorFromUpstream(failure: UpstreamError): ApiError {
  return answerReadFailure(failure).error;
}

/**
 * Why reads are failing, as a spell's log lines and the stale-answer metric name it: a closed
 * set. `backing_off` is a pause this instance did not start (another instance's, through Redis).
 */
export const FAILURE_REASONS = [
  'upstream_5xx',
  'unreachable',
  'timeout',
  'rate_limited',
  'key_refused',
  'path_missing',
  'bad_response',
  'refused',
  'backing_off',
] as const;
export type FailureReason = (typeof FAILURE_REASONS)[number];

/** Why a read was answered with a stale copy: a refresh is under way (`revalidating`), or a spell's reason. */
export type StaleReason = FailureReason | 'revalidating';
export const STALE_REASONS: readonly StaleReason[] = ['revalidating', ...FAILURE_REASONS];

/** The spell a failed load belongs to. */
export function failureReasonOf(failure: UpstreamError): FailureReason {
  if (failure.heldOffBy === 'backoff') return 'backing_off';
  if ((failure.status ?? 0) >= 500) return 'upstream_5xx';
  switch (failure.kind) {
    case 'unavailable':
      return 'unreachable';
    case 'timeout':
      return 'timeout';
    case 'rate_limited':
      return 'rate_limited';
    case 'auth':
      return 'key_refused';
    case 'not_found':
      return 'path_missing';
    case 'bad_response':
      return 'bad_response';
    default:
      return 'refused';
  }
}

/**
 * A failing upstream's reads, logged by the spell rather than by the request: one line when a
 * spell starts (`upstream_failure`, at `warn`, or `error` with a hint when the configuration is
 * to blame) and one when it ends (`upstream_failure_ended`, at `info`, with how long it lasted
 * and how many reads it affected), whatever the traffic. Each read's detail goes to the metrics
 * (`newsletter_bff_stale_answers_total{reason}`). docs/upstream.md "One line per spell".
 */
export interface FailureSpells {
  /** A load failed: starts a spell, or counts into the one under way (a held-off call always does). */
  loadFailed(key: string, failure: unknown): void;
  /** A load brought a copy the upstream gave at `fetchedAt`: a spell begun before that is over. */
  loaded(fetchedAt: number): void;
  /** A read answered stale or with an error: counted into the spell under way, whose reason it returns. */
  affectedRead(): FailureReason | undefined;
}

interface Spell {
  reason: FailureReason;
  startedAt: number;
  reads: number;
  failedLoads: number;
}

export function createFailureSpells(options: { log: Logger; now: () => number }): FailureSpells {
  const { log, now } = options;
  let spell: Spell | undefined;

  function end(current: Spell, endedBy: FailureReason | 'recovered'): void {
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
    loadFailed(key, failure) {
      if (!(failure instanceof UpstreamError)) {
        // Not the upstream: a fault of ours, logged each time (without its message, which may hold data).
        log.log('error', 'upstream_failure', { key, during: 'cache load', kind: 'unexpected' });
        return;
      }
      const reason = failureReasonOf(failure);
      // A call held off is the spell's own doing: it never changes what the spell is about.
      if (spell && (failure.heldOffBy !== undefined || reason === spell.reason)) {
        spell.failedLoads += 1;
        return;
      }
      if (spell) end(spell, reason);
      spell = { reason, startedAt: now(), reads: 0, failedLoads: 1 };
      // A 429's spell starts with the transport's one `upstream_hold_off` line, which says until when.
      if (failure.kind === 'rate_limited' && failure.status !== undefined) return;
      const { level, hint } = answerReadFailure(failure);
      log.log(level, 'upstream_failure', {
        key,
        during: 'cache load',
        reason,
        kind: failure.kind,
        status: failure.status,
        upstreamCode: failure.upstreamCode,
        message: failure.message,
        hint,
      });
    },
    loaded(fetchedAt) {
      if (spell && fetchedAt >= spell.startedAt) end(spell, 'recovered');
    },
    affectedRead() {
      if (!spell) return undefined;
      spell.reads += 1;
      return spell.reason;
    },
  };
}
