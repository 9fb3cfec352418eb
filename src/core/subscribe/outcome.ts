import { ApiError, type ApiErrorOptions, type ErrorCode } from '../http/errors.js';
import type { LogLevel } from '../log.js';

/** How an attempt that is not an error ended. `abandoned`: the client hung up (499); `timed_out`: REQUEST_TIMEOUT_SECONDS (408). */
type Settled = 'forwarded' | 'deduped' | 'honeypot' | 'refused_by_upstream' | 'abandoned' | 'timed_out';
type LogFields = Record<string, string | undefined>;

export type RecordOutcome = (outcome: Settled | SubscribeFailure['outcome'], fields?: LogFields, level?: LogLevel) => void;

/** An attempt that ends in an error, with its log line's fields; the route's one error handler logs and answers. */
export class SubscribeFailure extends ApiError {
  override readonly name = 'SubscribeFailure';
  readonly outcome: 'rejected' | 'paused' | 'failed';
  readonly logFields: LogFields;
  readonly level: LogLevel | undefined;

  constructor(
    code: ErrorCode,
    log: { outcome: SubscribeFailure['outcome']; fields?: LogFields; level?: LogLevel },
    options: ApiErrorOptions = {},
  ) {
    super(code, options);
    this.outcome = log.outcome;
    this.logFields = log.fields ?? {};
    this.level = log.level;
  }
}
