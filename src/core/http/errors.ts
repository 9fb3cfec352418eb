import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { NO_STORE } from '../reads/cache-policies.js';

/** The error codes of docs/contract.md ("Errors we return"), with their HTTP status. */
export const ERROR_STATUS = {
  VALIDATION_ERROR: 422,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  FORBIDDEN_ORIGIN: 403,
  CAPTCHA_FAILED: 403,
  CAPTCHA_REQUIRED: 403,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  RATE_LIMITED: 429,
  UPSTREAM_ERROR: 502,
  UPSTREAM_UNAVAILABLE: 503,
  INTERNAL_ERROR: 500,
} as const satisfies Record<string, ContentfulStatusCode>;

export type ErrorCode = keyof typeof ERROR_STATUS;
export type ErrorStatus = (typeof ERROR_STATUS)[ErrorCode];

/** One entry of a VALIDATION_ERROR's (or CAPTCHA_REQUIRED's) `details`. */
export interface ValidationIssue {
  path: string;
  message: string;
  /** CAPTCHA_REQUIRED only: the Turnstile site key the form renders its widget with. */
  siteKey?: string;
}

/** Our own wording for each code: clients never see upstream text. */
const DEFAULT_MESSAGES: Record<ErrorCode, string> = {
  VALIDATION_ERROR: 'The request is not valid.',
  NOT_FOUND: 'Not found.',
  METHOD_NOT_ALLOWED: 'Method not allowed.',
  FORBIDDEN_ORIGIN: 'This origin is not allowed.',
  CAPTCHA_FAILED: 'The anti-bot check did not pass. Complete it again, then resubmit.',
  CAPTCHA_REQUIRED: 'Complete the anti-bot check, then resubmit.',
  PAYLOAD_TOO_LARGE: 'The request body is too large.',
  UNSUPPORTED_MEDIA_TYPE: 'Send application/json, application/x-www-form-urlencoded or multipart/form-data.',
  RATE_LIMITED: 'Too many requests. Try again later.',
  UPSTREAM_ERROR: 'The newsletter service could not answer.',
  UPSTREAM_UNAVAILABLE: 'The newsletter service is busy. Try again later.',
  INTERNAL_ERROR: 'Something went wrong.',
};

export interface ApiErrorOptions {
  message?: string;
  details?: ValidationIssue[];
  /** Seconds, sent as `Retry-After` (429, 503). */
  retryAfter?: number;
  /** Methods, sent as `Allow` (405). */
  allow?: readonly string[];
  cause?: unknown;
}

/** The one error type routes throw; `renderError` turns it into the envelope. */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: ErrorStatus;
  readonly details: ValidationIssue[] | undefined;
  readonly retryAfter: number | undefined;
  readonly allow: readonly string[] | undefined;

  constructor(code: ErrorCode, options: ApiErrorOptions = {}) {
    // A client error (4xx) is an answer, not a fault: no one reads its stack, and capturing one
    // walks the whole chain of calls the request came through, a slug scan's 404s each time
    // (docs/performance.md). A server error keeps its stack.
    const stackTraceLimit = Error.stackTraceLimit;
    if (ERROR_STATUS[code] < 500) Error.stackTraceLimit = 0;
    try {
      super(options.message ?? DEFAULT_MESSAGES[code], { cause: options.cause });
    } finally {
      Error.stackTraceLimit = stackTraceLimit;
    }
    this.name = 'ApiError';
    this.code = code;
    this.status = ERROR_STATUS[code];
    this.details = options.details;
    this.retryAfter = options.retryAfter;
    this.allow = options.allow;
  }
}

/** The body of an error response, exactly as docs/contract.md shapes it. */
export function errorEnvelope(error: ApiError): {
  ok: false;
  error: { code: ErrorCode; message: string; details?: ValidationIssue[] };
} {
  const body: { code: ErrorCode; message: string; details?: ValidationIssue[] } = {
    code: error.code,
    message: error.message,
  };
  if (error.details) body.details = error.details;
  return { ok: false, error: body };
}

/** Renders any ApiError as the JSON envelope with its status and headers; errors are never cached. */
export function renderError(c: Context, error: ApiError) {
  const headers: Record<string, string> = { 'Cache-Control': NO_STORE };
  if (error.retryAfter !== undefined) headers['Retry-After'] = String(Math.max(1, Math.ceil(error.retryAfter)));
  if (error.allow) headers.Allow = error.allow.join(', ');
  return c.json(errorEnvelope(error), error.status, headers);
}

/** An error envelope response with its status, typed for `hc<AppType>`. */
export type ErrorResponse = ReturnType<typeof renderError>;
