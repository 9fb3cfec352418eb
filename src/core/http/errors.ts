import type { Context, TypedResponse } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import * as z from '../zod.js';
import { NO_STORE } from '../reads/cache-policies.js';

const ERRORS = {
  BAD_REQUEST: [400, 'The request could not be read: check its Host header and path.'],
  VALIDATION_ERROR: [422, 'The request is not valid.'],
  NOT_FOUND: [404, 'Not found.'],
  METHOD_NOT_ALLOWED: [405, 'Method not allowed.'],
  FORBIDDEN_ORIGIN: [403, 'This origin is not allowed.'],
  CAPTCHA_FAILED: [403, 'The anti-bot check did not pass. Complete it again, then resubmit.'],
  CAPTCHA_REQUIRED: [403, 'Complete the anti-bot check, then resubmit.'],
  PAYLOAD_TOO_LARGE: [413, 'The request body is too large.'],
  UNSUPPORTED_MEDIA_TYPE: [415, 'Send application/json, application/x-www-form-urlencoded or multipart/form-data.'],
  RATE_LIMITED: [429, 'Too many requests. Try again later.'],
  UPSTREAM_ERROR: [502, 'The newsletter service could not answer.'],
  UPSTREAM_UNAVAILABLE: [503, 'The newsletter service is busy. Try again later.'],
  INTERNAL_ERROR: [500, 'Something went wrong.'],
} as const satisfies Record<string, readonly [ContentfulStatusCode, string]>;

export type ErrorCode = keyof typeof ERRORS;
type ErrorStatus = (typeof ERRORS)[ErrorCode][0];

export const ERROR_STATUS = Object.fromEntries(Object.entries(ERRORS).map(([code, [status]]) => [code, status])) as {
  readonly [Code in ErrorCode]: (typeof ERRORS)[Code][0];
};

const SERVER_ERRORS = ['INTERNAL_ERROR', 'UPSTREAM_ERROR', 'UPSTREAM_UNAVAILABLE'] as const;

export const ROUTE_ERRORS = {
  '/api/issues': ['NOT_FOUND', 'VALIDATION_ERROR', ...SERVER_ERRORS],
  '/api/issues/:slug': ['NOT_FOUND', 'VALIDATION_ERROR', ...SERVER_ERRORS],
  '/api/categories': SERVER_ERRORS,
  '/api/subscribe': [
    ...(['FORBIDDEN_ORIGIN', 'CAPTCHA_FAILED', 'CAPTCHA_REQUIRED', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE'] as const),
    ...(['VALIDATION_ERROR', 'RATE_LIMITED', ...SERVER_ERRORS] as const),
  ],
} as const satisfies Record<string, readonly ErrorCode[]>;

/** For openapi.json and the tests only: made where it is read, so it stays out of the Worker bundle. */
export function createErrorBodySchemas() {
  const ValidationIssue = z.strictObject({
    path: z.string(),
    message: z.string(),
    siteKey: z.optional(z.string()).check(z.meta({ description: '`CAPTCHA_REQUIRED` only: the Turnstile site key.' })),
  });
  const ErrorBody = z.strictObject({
    ok: z.literal(false),
    error: z.strictObject({
      code: z.enum(Object.keys(ERRORS) as [ErrorCode, ...ErrorCode[]]),
      message: z.string().check(z.meta({ description: "Our own words; never the upstream's text." })),
      details: z.optional(z.array(ValidationIssue)),
    }),
  });
  return { ErrorBody, ValidationIssue };
}

export type RouteErrorStatus<Route extends keyof typeof ROUTE_ERRORS> = (typeof ERROR_STATUS)[(typeof ROUTE_ERRORS)[Route][number]];

export type ValidationIssue = z.infer<ReturnType<typeof createErrorBodySchemas>['ValidationIssue']>;

export type ErrorBody<Status extends ErrorStatus = ErrorStatus> = {
  ok: false;
  error: {
    code: { [Code in ErrorCode]: (typeof ERROR_STATUS)[Code] extends Status ? Code : never }[ErrorCode];
    message: string;
    details?: ValidationIssue[] | undefined;
  };
};

/** One typed response per status, so `hc<AppType>`'s `res.status === 404` narrows the body. */
export type ErrorAnswer<Status extends ErrorStatus> = Status extends ErrorStatus
  ? Response & TypedResponse<ErrorBody<Status>, Status, 'json'>
  : never;

export type ApiErrorOptions = Partial<Pick<ApiError, 'message' | 'details' | 'retryAfter' | 'allow' | 'cause'>>;

export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: ErrorStatus;
  readonly details: ValidationIssue[] | undefined;
  readonly retryAfter: number | undefined;
  readonly allow: readonly string[] | undefined;

  constructor(code: ErrorCode, { message, cause, ...options }: ApiErrorOptions = {}) {
    // A client error is an answer, not a fault: no stack, which would be dear for a slug scan's 404s.
    const stackTraceLimit = Error.stackTraceLimit;
    if (ERRORS[code][0] < 500) Error.stackTraceLimit = 0;
    super(message ?? ERRORS[code][1], { cause });
    Error.stackTraceLimit = stackTraceLimit;
    [this.name, this.code, this.status] = ['ApiError', code, ERRORS[code][0]];
    ({ details: this.details, retryAfter: this.retryAfter, allow: this.allow } = options);
  }
}

export function renderError(c: Context, error: ApiError) {
  const { retryAfter, allow, details } = error;
  const headers: Record<string, string> = { 'Cache-Control': NO_STORE };
  if (retryAfter !== undefined) headers['Retry-After'] = String(Math.max(1, Math.ceil(retryAfter)));
  if (allow) headers.Allow = allow.join(', ');
  const body: ErrorBody = { ok: false, error: { code: error.code, message: error.message, ...(details && { details }) } };
  return c.json(body, error.status, headers);
}

export const REQUEST_TIMEOUT = 408;

/** The status of a request gone before it was read whole (nothing is sent): nginx's 499, or 408. */
export const cutOffStatus = (c: Context, timedOut: (c: Context) => boolean) =>
  c.req.raw.signal?.aborted ? (timedOut(c) ? REQUEST_TIMEOUT : 499) : undefined;
