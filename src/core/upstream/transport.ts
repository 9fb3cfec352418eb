import { noopMetrics, type Metrics } from '../metrics.js';
import type * as z from '../zod.js';
import {
  DEFAULT_RETRY_AFTER_SECONDS,
  isSuccessStatus,
  MAX_RESPONSE_BYTES,
  MAX_RETRY_AFTER_SECONDS,
  NOT_FOUND_STATUS,
} from './assumptions.js';
import { backoffPauseMs, createMemoryHoldOff, type HoldOff, type HoldOffStart, type OperationClass } from './hold-off.js';

/* JSON over HTTP as unjs/ofetch does it, plus what it lacks: capped reads, hold-offs, errors without the upstream's text. */

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

type UpstreamErrorDetails = Partial<Pick<UpstreamError, 'status' | 'retryAfterSeconds' | 'upstreamCode' | 'heldOffBy' | 'heldUntilMs'>>;

/** The one error of the upstream client. Its message is our own wording: never the upstream's text, a header or the key. */
export class UpstreamError extends Error {
  override name = 'UpstreamError';
  readonly status: number | undefined;
  readonly retryAfterSeconds: number | undefined;
  /** The upstream's error code when well formed, for logs only. */
  readonly upstreamCode: string | undefined;
  /** Why a call was held off without going out (a `rate_limited` error without a status), and until when. */
  readonly heldOffBy: 'retry_after' | 'backoff' | undefined;
  readonly heldUntilMs: number | undefined;

  constructor(
    readonly kind: UpstreamErrorKind,
    message: string,
    { cause, ...details }: UpstreamErrorDetails & { cause?: unknown } = {},
  ) {
    super(message, { cause });
    this.status = details.status;
    this.retryAfterSeconds = details.retryAfterSeconds;
    this.upstreamCode = details.upstreamCode;
    this.heldOffBy = details.heldOffBy;
    this.heldUntilMs = details.heldUntilMs;
  }
}

/** A body over the cap: the caller may ask for less (a list page with fewer rows). */
export class ResponseTooLarge extends UpstreamError {
  constructor(
    status: number,
    maxResponseBytes: number,
    readonly declaredBytes?: number,
  ) {
    super('bad_response', `upstream ${status} body exceeds ${maxResponseBytes} bytes`, { status });
  }
}

/** Transient failures, retried within the budget. Not 429 (held off), nor 408/409 (undocumented upstream). */
const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([500, 502, 503, 504]);
/** What a timed-out call tells our caller to wait: a guess of our own, short enough to retry soon. */
const TIMEOUT_RETRY_AFTER_SECONDS = 5;
/** An error code worth keeping for the logs: upper-case and short, so never free text or a key. */
const WELL_FORMED_CODE = /^[A-Z][A-Z0-9_]{0,63}$/;
/** A read's last failure and what it does to the failure streak: the upstream failing, or answering a wrong call. */
const FAILING_KINDS: ReadonlySet<UpstreamErrorKind> = new Set(['unavailable', 'timeout', 'auth']);
const ANSWERED_KINDS: ReadonlySet<UpstreamErrorKind> = new Set(['not_found', 'validation', 'refused']);

export interface TransportOptions {
  timeoutMs: number;
  fetch?: typeof globalThis.fetch;
  maxResponseBytes?: number;
  /** Retries after the first attempt (docs/contract.md "Upstream calls"); none for a POST by default. */
  getRetries?: number;
  postRetries?: number;
  baseDelayMs?: number;
  maxDelayMs?: number;
  random?: () => number;
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
  headers?: Readonly<Record<string, string>>;
  errorCodeOf?: (body: unknown) => string | undefined;
  /** An error code that means "not found" at any 4xx status. */
  notFoundCode?: string;
  holdOff?: HoldOff;
  /** A hold-off this short is waited out instead of failing (`check` only: a visitor gets a stale copy instead). */
  waitWhenHeldOffMs?: number;
  /** Told once per hold-off a 429 starts. */
  onHoldOff?: (start: HoldOffStart) => void;
  metrics?: Pick<Metrics, 'upstreamRetry' | 'upstreamHoldOff'>;
}

export interface TransportRequest<T> {
  method: 'GET' | 'POST';
  url: URL;
  schema: z.ZodMiniType<T>;
  body?: unknown;
  /** Sent as If-None-Match / If-Modified-Since (RFC 9110 §13.1); a 304 then returns `notModified()`. */
  conditional?: Validators | undefined;
  notModified?: () => T;
  onValidators?: (validators: Validators) => void;
  onBytes?: (bytes: number) => void;
  /** Replaces JSON.parse (and throws as it does), to leave out what the schema would strip. */
  parse?: (text: string) => unknown;
}

export type Validators = { etag?: string | undefined; lastModified?: string | undefined };

export function createTransport(options: TransportOptions): <T>(request: TransportRequest<T>) => Promise<T> {
  const {
    timeoutMs,
    fetch: fetchImpl = globalThis.fetch.bind(globalThis),
    maxResponseBytes = MAX_RESPONSE_BYTES,
    getRetries = 2,
    postRetries = 0,
    baseDelayMs = 100,
    maxDelayMs = 1000,
    random = Math.random,
    sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)),
    now = Date.now,
    headers: fixedHeaders = {},
    errorCodeOf = () => undefined,
    notFoundCode,
    holdOff = createMemoryHoldOff(now),
    onHoldOff,
    metrics = noopMetrics,
    waitWhenHeldOffMs = 0,
  } = options;
  /** The one read out during a failure streak: the other reads wait for its answer. */
  let probe: Promise<void> | undefined;
  /** The latest hold-off reported per class, so concurrent calls that met one 429 report it once. */
  const reported: Record<OperationClass, number> = { read: 0, write: 0 };

  return async function request<T>(call: TransportRequest<T>): Promise<T> {
    const operation: OperationClass = call.method === 'GET' ? 'read' : 'write';
    // Only reads back off after failures: a subscribe is one person's attempt, answered as it goes.
    const backsOff = operation === 'read';
    let streak = await admit(operation);
    if (backsOff && streak > 0 && probe !== undefined) {
      await probe;
      // Back: the streak has ended. Still failing: the probe's failure began a new pause.
      streak = await admit(operation);
      if (streak > 0) throw heldOff(now(), streak);
    }
    const failing = backsOff && streak > 0;
    let probed = () => {};
    if (failing) probe = new Promise<void>((resolve) => (probed = resolve));
    // While failures run, the pause between calls is the retry: one attempt each, never a burst.
    const retries = failing ? 0 : backsOff ? getRetries : postRetries;
    const startedAt = now();
    try {
      for (let attempt = 0; ; attempt += 1) {
        try {
          const answer = await attemptOnce(call, operation);
          if (failing) await holdOff.answered(operation);
          return answer;
        } catch (error) {
          if (!(error instanceof UpstreamError)) throw error;
          if (error.kind !== 'unavailable' || attempt >= retries) {
            // docs/upstream.md "Backing off a failing upstream": a 429 has its own hold-off, a bad body is one resource's.
            if (backsOff && (FAILING_KINDS.has(error.kind) || (error.status ?? 0) >= 500)) {
              const failedAt = now();
              const failedRounds = await holdOff.failed(operation, startedAt, failedAt);
              await holdOff.hold(operation, failedAt + backoffPauseMs(failedRounds, random));
            } else if (failing && ANSWERED_KINDS.has(error.kind)) {
              await holdOff.answered(operation);
            }
            throw error;
          }
          metrics.upstreamRetry();
          // Exponential backoff with full jitter (spreads retries of many instances apart).
          await sleep(Math.round(random() * Math.min(maxDelayMs, baseDelayMs * 2 ** attempt)));
          const held = await holdOff.state(operation);
          // A 429 met meanwhile holds this retry off; a pause after failures holds only later calls.
          if (held.untilMs > now() && held.streak === 0) throw heldOff(held.untilMs, 0);
        }
      }
    } finally {
      if (failing) {
        probe = undefined;
        probed();
      }
    }
  };

  /** The failure streak a call goes out under; throws while its class is held off, unless short enough to wait out. */
  async function admit(operation: OperationClass): Promise<number> {
    const held = await holdOff.state(operation);
    const waitMs = held.untilMs - now();
    if (waitMs > waitWhenHeldOffMs) throw heldOff(held.untilMs, held.streak);
    if (waitMs > 0) await sleep(waitMs);
    return held.streak;
  }

  function heldOff(untilMs: number, streak: number): UpstreamError {
    const held = { retryAfterSeconds: Math.max(1, Math.ceil((untilMs - now()) / 1000)), heldUntilMs: untilMs };
    return streak > 0
      ? new UpstreamError('rate_limited', `backing off after ${streak} failed rounds of upstream calls`, { ...held, heldOffBy: 'backoff' })
      : new UpstreamError('rate_limited', 'holding off after the upstream asked us to slow down', { ...held, heldOffBy: 'retry_after' });
  }

  async function attemptOnce<T>(call: TransportRequest<T>, operation: OperationClass): Promise<T> {
    const { method, url, body, conditional } = call;
    // Built from scratch on every call: no header of the visitor's request is ever passed on.
    const headers: Record<string, string> = { ...fixedHeaders, Accept: 'application/json' };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    if (conditional?.etag !== undefined) headers['If-None-Match'] = conditional.etag;
    if (conditional?.lastModified !== undefined) headers['If-Modified-Since'] = conditional.lastModified;
    let response: Response;
    try {
      const signal = AbortSignal.timeout(timeoutMs);
      // A redirect must never carry the key to another host ('error' is refused by Workers' fetch).
      response = await fetchImpl(url, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal,
        redirect: 'manual',
      });
    } catch (error) {
      throw transportError(error);
    }

    const { status } = response;
    if (status === 304 && conditional !== undefined && call.notModified !== undefined) {
      await discard(response);
      return call.notModified();
    }
    if (status >= 300 && status < 400) {
      await discard(response);
      throw new UpstreamError('bad_response', `upstream answered with a redirect (${status}); not followed`, { status });
    }
    if (!isSuccessStatus(status)) throw await failureFromResponse(response, `${method} ${url.pathname}`, operation);
    const etag = response.headers.get('etag') ?? undefined;
    const lastModified = response.headers.get('last-modified') ?? undefined;
    // The text is not kept in a variable, so a large page is let go once parsed.
    const parsed = call.schema.safeParse(parseJson(await readCapped(response, call.onBytes), status, call.parse));
    if (etag !== undefined || lastModified !== undefined) call.onValidators?.({ etag, lastModified });
    if (parsed.success) return parsed.data;
    throw new UpstreamError('bad_response', `upstream ${status} body does not match the expected shape`, { status, cause: parsed.error });
  }

  /** `call`: the method and path for the hold-off's log line, never its query or a header. */
  async function failureFromResponse(response: Response, call: string, operation: OperationClass): Promise<UpstreamError> {
    const { status } = response;
    let upstreamCode: string | undefined;
    try {
      const code = errorCodeOf(parseJson(await readCapped(response), status));
      upstreamCode = code !== undefined && WELL_FORMED_CODE.test(code) ? code : undefined;
    } catch {
      // The status alone decides the kind; an unreadable error body changes nothing.
    }
    const details = { status, upstreamCode };
    // Only 401 is documented for a bad key; a 403 stays a plain refusal, so subscribe reveals nothing.
    if (status === 401) return new UpstreamError('auth', 'upstream rejected the API key (401)', details);
    if (status === NOT_FOUND_STATUS || (status < 500 && upstreamCode !== undefined && upstreamCode === notFoundCode)) {
      return new UpstreamError('not_found', `upstream answered not found (${status})`, details);
    }
    if (status === 422) return new UpstreamError('validation', 'upstream rejected the request as invalid (422)', details);
    if (status === 429) {
      const asked = parseRetryAfter(response.headers.get('retry-after'), now()) ?? DEFAULT_RETRY_AFTER_SECONDS;
      const retryAfterSeconds = Math.min(MAX_RETRY_AFTER_SECONDS, asked);
      await holdOffAfter429(operation, call, retryAfterSeconds);
      return new UpstreamError('rate_limited', 'upstream asked us to slow down (429)', { ...details, retryAfterSeconds });
    }
    if (status < 500) return new UpstreamError('refused', `upstream refused the request (${status})`, details);
    return new UpstreamError(RETRYABLE_STATUSES.has(status) ? 'unavailable' : 'bad_response', `upstream failed (${status})`, details);
  }

  async function holdOffAfter429(operation: OperationClass, call: string, retryAfterSeconds: number): Promise<void> {
    const time = now();
    const untilMs = time + retryAfterSeconds * 1000;
    const startsHere = reported[operation] <= time;
    reported[operation] = Math.max(reported[operation], untilMs);
    const heldUntil = (await holdOff.state(operation)).untilMs;
    metrics.upstreamHoldOff(Math.max(0, untilMs - Math.max(heldUntil, time)) / 1000);
    await holdOff.hold(operation, untilMs);
    if (startsHere && heldUntil <= time) onHoldOff?.({ operation, call, untilMs, retryAfterSeconds });
  }

  async function readCapped(response: Response, onBytes?: (bytes: number) => void): Promise<string> {
    const { status } = response;
    const declared = Number(response.headers.get('content-length') ?? Number.NaN);
    const tooLarge = () => new ResponseTooLarge(status, maxResponseBytes, Number.isFinite(declared) ? declared : undefined);
    if (declared > maxResponseBytes) {
      await discard(response);
      throw tooLarge();
    }
    const reader = response.body?.getReader();
    // Decoded as it arrives: a large body is held once, as text, never also as bytes.
    const decoder = new TextDecoder('utf-8', { fatal: true });
    const decode = (bytes?: Uint8Array): string => {
      try {
        return decoder.decode(bytes, { stream: bytes !== undefined });
      } catch (error) {
        throw new UpstreamError('bad_response', `upstream ${status} body is not valid UTF-8`, { status, cause: error });
      }
    };
    const parts: string[] = [];
    let total = 0;
    try {
      for (let chunk = await reader?.read(); chunk !== undefined && !chunk.done; chunk = await reader?.read()) {
        total += chunk.value.byteLength;
        if (total > maxResponseBytes) {
          await reader?.cancel().catch(() => undefined);
          throw tooLarge();
        }
        parts.push(decode(chunk.value));
      }
      parts.push(decode());
    } catch (error) {
      throw error instanceof UpstreamError ? error : transportError(error);
    }
    onBytes?.(total);
    return parts.join('');
  }

  function transportError(error: unknown): UpstreamError {
    const name = error instanceof Error ? error.name : '';
    if (name !== 'TimeoutError' && name !== 'AbortError')
      return new UpstreamError('unavailable', 'could not reach the upstream', { cause: error });
    const details = { retryAfterSeconds: TIMEOUT_RETRY_AFTER_SECONDS, cause: error };
    return new UpstreamError('timeout', `upstream did not answer within ${timeoutMs} ms`, details);
  }
}

function parseJson(text: string, status: number, parse: (text: string) => unknown = JSON.parse): unknown {
  try {
    return parse(text);
  } catch (error) {
    throw new UpstreamError('bad_response', `upstream ${status} body is not JSON`, { status, cause: error });
  }
}

/** Seconds from a `Retry-After` header: delta-seconds or an HTTP date (RFC 9110 §10.2.3). */
export function parseRetryAfter(value: string | null, nowMs: number): number | undefined {
  const trimmed = value?.trim() ?? '';
  if (/^\d{1,9}$/.test(trimmed)) return Math.max(1, Number(trimmed));
  // Only an IMF-fixdate is read as a date: Date.parse would take '-5' or '1.5' for a year.
  if (!/^[A-Za-z]{3}, \d{2} [A-Za-z]{3} \d{4} \d{2}:\d{2}:\d{2} GMT$/.test(trimmed)) return undefined;
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? undefined : Math.max(1, Math.ceil((date - nowMs) / 1000));
}

async function discard(response: Response): Promise<void> {
  await response.body?.cancel().catch(() => undefined);
}
