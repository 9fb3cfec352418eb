import { ApiError, type ApiErrorOptions, type ErrorCode } from '../http/errors.js';
import type { LogLevel } from '../log.js';

/** How a subscribe attempt ended. `abandoned`: the client hung up (499); `timed_out`: REQUEST_TIMEOUT_SECONDS (408). */
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

export type RecordOutcome = (outcome: SubscribeOutcome, fields?: Record<string, string | undefined>, level?: LogLevel) => void;

/** An attempt that ends in an error, with its log line's fields; the route's one error handler logs and answers. */
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
