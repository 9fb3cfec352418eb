/** How an upstream call failed; failure-policy.ts maps each kind to one of docs/contract.md's codes. */
export type UpstreamErrorKind =
  | 'auth'
  | 'not_found'
  | 'validation'
  | 'rate_limited'
  | 'timeout'
  | 'unavailable'
  | 'refused'
  | 'bad_response';

/** Why a call was held off without going out (then it is a `rate_limited` error without a status). */
export type HeldOffBy = 'retry_after' | 'backoff';

/** The one error of the upstream client. Its message is our own wording: never the upstream's text, a header or the key. */
export class UpstreamError extends Error {
  readonly kind: UpstreamErrorKind;
  readonly status: number | undefined;
  readonly retryAfterSeconds: number | undefined;
  /** The upstream's error code when well formed, for logs only. */
  readonly upstreamCode: string | undefined;
  readonly heldOffBy: HeldOffBy | undefined;
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
