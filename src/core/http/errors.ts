import type { Context, TypedResponse } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import * as z from '../zod.js';
import { NO_STORE } from '../reads/cache-policies.js';

/** The error codes of docs/contract.md ("Errors we return"), with their HTTP status. */
export const ERROR_STATUS = {
  BAD_REQUEST: 400,
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

/** The errors each public route can answer with besides a 405 (openapi.json lists them per operation). */
export const ROUTE_ERRORS = {
  '/api/issues': ['NOT_FOUND', 'VALIDATION_ERROR', 'INTERNAL_ERROR', 'UPSTREAM_ERROR', 'UPSTREAM_UNAVAILABLE'],
  '/api/issues/:slug': ['NOT_FOUND', 'VALIDATION_ERROR', 'INTERNAL_ERROR', 'UPSTREAM_ERROR', 'UPSTREAM_UNAVAILABLE'],
  '/api/categories': ['INTERNAL_ERROR', 'UPSTREAM_ERROR', 'UPSTREAM_UNAVAILABLE'],
  '/api/subscribe': [
    'FORBIDDEN_ORIGIN',
    'CAPTCHA_FAILED',
    'CAPTCHA_REQUIRED',
    'PAYLOAD_TOO_LARGE',
    'UNSUPPORTED_MEDIA_TYPE',
    'VALIDATION_ERROR',
    'RATE_LIMITED',
    'INTERNAL_ERROR',
    'UPSTREAM_ERROR',
    'UPSTREAM_UNAVAILABLE',
  ],
} as const satisfies Record<string, readonly ErrorCode[]>;

/** The error envelope's schema, for openapi.json and the tests only: made where it is read, so it stays out of the Worker bundle. */
export function createErrorBodySchemas() {
  const ValidationIssue = z.strictObject({
    path: z.string(),
    message: z.string(),
    siteKey: z
      .optional(z.string())
      .check(z.meta({ description: '`CAPTCHA_REQUIRED` only: the Turnstile site key to render the widget with.' })),
  });
  const ErrorBody = z.strictObject({
    ok: z.literal(false),
    error: z.strictObject({
      code: z.enum(Object.keys(ERROR_STATUS) as [ErrorCode, ...ErrorCode[]]),
      message: z.string().check(z.meta({ description: "Our own words; never the upstream's text." })),
      details: z.optional(z.array(ValidationIssue)),
    }),
  });
  return { ErrorBody, ValidationIssue };
}

/** The error statuses a route answers, typed into its answers so a typed client can test `res.status === 404`. */
export type RouteErrorStatus<Route extends keyof typeof ROUTE_ERRORS> = (typeof ERROR_STATUS)[(typeof ROUTE_ERRORS)[Route][number]];

type ErrorBodySchemas = ReturnType<typeof createErrorBodySchemas>;
export type ValidationIssue = z.infer<ErrorBodySchemas['ValidationIssue']>;

/** Our own wording for each code: clients never see upstream text. */
const DEFAULT_MESSAGES: Record<ErrorCode, string> = {
  BAD_REQUEST: 'The request could not be read: check its Host header and path.',
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
  /** Seconds, sent as `Retry-After`. */
  retryAfter?: number;
  /** Methods, sent as `Allow`. */
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
    // A client error is an answer, not a fault: no stack, which would be dear for a slug scan's 404s.
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

type ErrorCodeOf<Status extends ErrorStatus> = {
  [Code in ErrorCode]: (typeof ERROR_STATUS)[Code] extends Status ? Code : never;
}[ErrorCode];

/** The body of an error answer with `Status` (any error by default). */
type SchemaErrorBody = z.infer<ErrorBodySchemas['ErrorBody']>;
type Flat<T> = { [Key in keyof T]: T[Key] } & {};
export type ErrorBody<Status extends ErrorStatus = ErrorStatus> = Flat<
  Omit<SchemaErrorBody, 'error'> & { error: Flat<Omit<SchemaErrorBody['error'], 'code'> & { code: ErrorCodeOf<Status> }> }
>;

/** One typed response per status, so `hc<AppType>`'s `res.status === 404` narrows the body; a handler throws, onError renders. */
export type ErrorAnswer<Status extends ErrorStatus> = Status extends ErrorStatus
  ? Response & TypedResponse<ErrorBody<Status>, Status, 'json'>
  : never;

/** The body of an error response, exactly as docs/contract.md shapes it. */
export function errorEnvelope(error: ApiError): ErrorBody {
  const body: { code: ErrorCode; message: string; details?: ValidationIssue[] } = { code: error.code, message: error.message };
  if (error.details) body.details = error.details;
  return { ok: false, error: body };
}

/** Any ApiError as the JSON envelope with its status and headers; errors are never cached. */
export function renderError(c: Context, error: ApiError) {
  const headers: Record<string, string> = { 'Cache-Control': NO_STORE };
  if (error.retryAfter !== undefined) headers['Retry-After'] = String(Math.max(1, Math.ceil(error.retryAfter)));
  if (error.allow) headers.Allow = error.allow.join(', ');
  return c.json(errorEnvelope(error), error.status, headers);
}

/** Nginx's 499: the client hung up before its request was read whole. */
export const CLIENT_CLOSED_REQUEST = 499;
/** The listener's REQUEST_TIMEOUT_SECONDS cut the request off; Node answered the 408 itself. */
export const REQUEST_TIMEOUT = 408;

/** The true status of a request gone before it was read whole (nothing is sent), for the log and metrics; undefined while it is there. */
export function cutOffStatus(
  c: Context,
  timedOut: (c: Context) => boolean,
): typeof CLIENT_CLOSED_REQUEST | typeof REQUEST_TIMEOUT | undefined {
  if (!c.req.raw.signal?.aborted) return undefined;
  return timedOut(c) ? REQUEST_TIMEOUT : CLIENT_CLOSED_REQUEST;
}
