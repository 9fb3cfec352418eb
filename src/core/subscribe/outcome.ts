import { ApiError, type ApiErrorOptions, type ErrorCode } from '../http/errors.js';
import type { LogLevel } from '../log.js';

/**
 * How a subscribe attempt ended, as its log line names it. `abandoned`: the client hung up before
 * its body arrived (499); `timed_out`: the listener's REQUEST_TIMEOUT_SECONDS cut the body off (408).
 */
export type SubscribeOutcome =
  | 'forwarded'
  | 'deduped'
  | 'honeypot'
  | 'refused_by_upstream'
  | 'rejected'
  | 'paused'
  | 'failed'
  | 'abandoned'
  | 'timed_out';

/** Writes the one `subscribe` log line of an attempt. */
export type RecordOutcome = (outcome: SubscribeOutcome, fields?: Record<string, string | undefined>, level?: LogLevel) => void;

/**
 * A subscribe attempt that ends in an error, with what its log line says beyond the code (the
 * upstream's status, why the challenge failed). Thrown like any ApiError; the subscribe route's
 * one error handler writes the line and answers (routes/subscribe.ts).
 */
export class SubscribeFailure extends ApiError {
  readonly outcome: Exclude<SubscribeOutcome, 'forwarded' | 'deduped' | 'honeypot' | 'refused_by_upstream' | 'abandoned' | 'timed_out'>;
  readonly logFields: Record<string, string | undefined>;
  readonly level: LogLevel | undefined;

  constructor(
    code: ErrorCode,
    log: { outcome: SubscribeFailure['outcome']; fields?: Record<string, string | undefined>; level?: LogLevel },
    options: ApiErrorOptions = {},
  ) {
    super(code, options);
    this.name = 'SubscribeFailure';
    this.outcome = log.outcome;
    this.logFields = log.fields ?? {};
    this.level = log.level;
  }
}
