/** How an upstream call failed; the routes map each kind to one of docs/contract.md's codes. */
export type UpstreamErrorKind =
  | 'auth'
  | 'not_found'
  | 'validation'
  | 'rate_limited'
  | 'timeout'
  | 'unavailable'
  | 'refused'
  | 'bad_response';

/**
 * Why a call was held off without going out: a 429's `Retry-After`, or the pause after failed
 * calls (hold-off.ts). Such an error is a `rate_limited` one without a status.
 */
export type HeldOffBy = 'retry_after' | 'backoff';

/**
 * The one error of the upstream client. Its message is our own wording: the upstream's text,
 * headers and the API key never reach it.
 */
export class UpstreamError extends Error {
  readonly kind: UpstreamErrorKind;
  readonly status: number | undefined;
  readonly retryAfterSeconds: number | undefined;
  /** The upstream's error code when it matched `^[A-Z][A-Z0-9_]{0,63}$`, for logs only. */
  readonly upstreamCode: string | undefined;
  /** Set when the call never went out because calls were held off, and why. */
  readonly heldOffBy: HeldOffBy | undefined;
  /** When that hold-off ends (ms since the epoch): the next call may go out then. */
  readonly heldUntilMs: number | undefined;

  constructor(
    kind: UpstreamErrorKind,
    message: string,
    options: {
      status?: number;
      retryAfterSeconds?: number;
      upstreamCode?: string;
      heldOffBy?: HeldOffBy;
      heldUntilMs?: number;
      cause?: unknown;
    } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = 'UpstreamError';
    this.kind = kind;
    this.status = options.status;
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.upstreamCode = options.upstreamCode;
    this.heldOffBy = options.heldOffBy;
    this.heldUntilMs = options.heldUntilMs;
  }
}
