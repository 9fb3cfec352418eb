import { noopMetrics, type Metrics } from '../metrics.js';
import type * as z from '../zod.js';
import { DEFAULT_RETRY_AFTER_SECONDS, MAX_RETRY_AFTER_SECONDS, NOT_FOUND_STATUS } from './assumptions.js';
import { isSuccessStatus, MAX_RESPONSE_BYTES } from './assumptions.js';
import { UpstreamErrorBodySchema } from './schemas.js';
import { backoffPauseMs, createMemoryHoldOff, type HoldOff, type OperationClass } from './hold-off.js';

/* JSON over HTTP as unjs/ofetch does it, plus the key, the error codes, capped reads, hold-offs and errors without the upstream's text. */

const ERROR_KINDS = ['auth', 'not_found', 'validation', 'rate_limited', 'timeout', 'unavailable', 'refused', 'bad_response'] as const;
export type UpstreamErrorKind = (typeof ERROR_KINDS)[number];

type UpstreamErrorDetails = Partial<Pick<UpstreamError, 'status' | 'retryAfterSeconds' | 'upstreamCode' | 'heldOffBy' | 'heldUntilMs'>>;

/** Its message is our own wording: never the upstream's text, a header or the key. `heldOffBy`: held off without going out. */
export class UpstreamError extends Error {
  // Declared first: the fields keep the order a log or a debugger has always shown.
  readonly kind: UpstreamErrorKind;
  override name = 'UpstreamError';
  readonly status: number | undefined;
  readonly retryAfterSeconds: number | undefined;
  readonly upstreamCode: string | undefined;
  readonly heldOffBy: 'retry_after' | 'backoff' | undefined;
  readonly heldUntilMs: number | undefined;

  constructor(kind: UpstreamErrorKind, message: string, { cause, ...details }: UpstreamErrorDetails & { cause?: unknown } = {}) {
    super(message, { cause });
    this.kind = kind;
    Object.assign(this, details);
  }
}

export class ResponseTooLarge extends UpstreamError {
  readonly declaredBytes: number | undefined;

  constructor(status: number, maxResponseBytes: number, declaredBytes?: number) {
    super('bad_response', `upstream ${status} body exceeds ${maxResponseBytes} bytes`, { status });
    this.declaredBytes = declaredBytes;
  }
}

const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([500, 502, 503, 504]);
const GET_RETRIES = 2;
/** Create Subscriber creates or resubscribes, so one repeat after a 5xx or a reset is safe. */
const POST_RETRIES = 1;
const RETRY_BASE_DELAY_MS = 100;
const TIMEOUT_RETRY_AFTER_SECONDS = 5;
const WELL_FORMED_CODE = /^[A-Z][A-Z0-9_]{0,63}$/;
/** A read's last failure: the upstream failing (the streak grows), or answering a wrong call (it ends). */
const FAILING_KINDS: ReadonlySet<UpstreamErrorKind> = new Set(['unavailable', 'timeout', 'auth']);
const ANSWERED_KINDS: ReadonlySet<UpstreamErrorKind> = new Set(['not_found', 'validation', 'refused']);

export interface TransportOptions {
  apiKey: string;
  timeoutMs: number;
  fetch?: typeof globalThis.fetch;
  maxResponseBytes?: number;
  random?: () => number;
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
  holdOff?: HoldOff;
  /** Waited out instead of failing (`check` only: a visitor gets a stale copy instead). */
  waitWhenHeldOffMs?: number;
  onHoldOff?: (start: { operation: OperationClass; call: string; untilMs: number; retryAfterSeconds: number }) => void;
  metrics?: Pick<Metrics, 'upstreamRetry' | 'upstreamHoldOff'>;
}

export interface TransportRequest<T> {
  method: 'GET' | 'POST';
  url: URL;
  schema: z.ZodMiniType<T>;
  body?: unknown;
  conditional?: Validators | undefined;
  notModified?: () => T;
  /** Filled with what a success said besides its body. */
  answered?: { validators?: Validators; bytes?: number };
  /** Replaces JSON.parse, to leave out what the schema would strip. */
  parse?: (text: string) => unknown;
}

export type Validators = { etag?: string | undefined; lastModified?: string | undefined };

export function createTransport(options: TransportOptions): <T>(request: TransportRequest<T>) => Promise<T> {
  const { timeoutMs, fetch: fetchImpl = globalThis.fetch.bind(globalThis), maxResponseBytes = MAX_RESPONSE_BYTES } = options;
  const { apiKey, now = Date.now, holdOff = createMemoryHoldOff(now), onHoldOff, waitWhenHeldOffMs = 0, random = Math.random } = options;
  const { metrics = noopMetrics, sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)) } = options;
  // The one read out during a failure streak: the other reads wait for its answer.
  let probe: Promise<void> | undefined;
  // So concurrent calls that met one 429 report it once.
  const reported: Record<OperationClass, number> = { read: 0, write: 0 };

  return async function request<T>(call: TransportRequest<T>): Promise<T> {
    const operation: OperationClass = call.method === 'GET' ? 'read' : 'write';
    // Only reads back off after failures: a subscribe is one person's attempt, answered as it goes.
    const backsOff = operation === 'read';
    let streak = await admit(operation);
    if (backsOff && streak > 0 && probe !== undefined) {
      await probe;
      streak = await admit(operation);
      if (streak > 0) throw heldOff(now(), streak);
    }
    const failing = backsOff && streak > 0;
    let probed = () => {};
    if (failing) probe = new Promise<void>((resolve) => (probed = resolve));
    // While failures run, the pause between calls is the retry: one attempt each, never a burst.
    const retries = failing ? 0 : backsOff ? GET_RETRIES : POST_RETRIES;
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
            // A 429 has its own hold-off, a bad body is one resource's (docs/upstream.md "Backing off a failing upstream").
            if (backsOff && (FAILING_KINDS.has(error.kind) || (error.status ?? 0) >= 500)) {
              const failedAt = now();
              await holdOff.hold(operation, failedAt + backoffPauseMs(await holdOff.failed(operation, startedAt, failedAt), random));
            } else if (failing && ANSWERED_KINDS.has(error.kind)) {
              await holdOff.answered(operation);
            }
            throw error;
          }
          metrics.upstreamRetry();
          await sleep(Math.round(random() * RETRY_BASE_DELAY_MS * 2 ** attempt));
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
    const headers: Record<string, string> = { Authorization: `Bearer ${apiKey}`, Accept: 'application/json' };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    if (conditional?.etag !== undefined) headers['If-None-Match'] = conditional.etag;
    if (conditional?.lastModified !== undefined) headers['If-Modified-Since'] = conditional.lastModified;
    let response: Response;
    try {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      // A redirect must never carry the key to another host ('error' is refused by Workers' fetch).
      response = await fetchImpl(url, { method, headers, body: payload, signal: AbortSignal.timeout(timeoutMs), redirect: 'manual' });
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
    const parsed = call.schema.safeParse(parseJson(await readCapped(response, call.answered), status, call.parse));
    if (call.answered && (etag !== undefined || lastModified !== undefined)) call.answered.validators = { etag, lastModified };
    if (parsed.success) return parsed.data;
    throw new UpstreamError('bad_response', `upstream ${status} body does not match the expected shape`, { status, cause: parsed.error });
  }

  async function failureFromResponse(response: Response, call: string, operation: OperationClass): Promise<UpstreamError> {
    const { status } = response;
    // The status alone decides the kind: an unreadable error body only leaves the code unknown.
    const code = await readCapped(response)
      .then((text) => UpstreamErrorBodySchema.safeParse(parseJson(text, status)).data?.error.code)
      .catch(() => undefined);
    const upstreamCode = code !== undefined && WELL_FORMED_CODE.test(code) ? code : undefined;
    const details = { status, upstreamCode };
    // Only 401 is documented for a bad key; a 403 stays a plain refusal, so subscribe reveals nothing.
    if (status === 401) return new UpstreamError('auth', 'upstream rejected the API key (401)', details);
    if (status === NOT_FOUND_STATUS || (status < 500 && upstreamCode === 'NOT_FOUND')) {
      return new UpstreamError('not_found', `upstream answered not found (${status})`, details);
    }
    if (status === 422) return new UpstreamError('validation', 'upstream rejected the request as invalid (422)', details);
    if (status === 429) {
      const asked = parseRetryAfter(response.headers.get('retry-after'), now()) ?? DEFAULT_RETRY_AFTER_SECONDS;
      const retryAfterSeconds = Math.min(MAX_RETRY_AFTER_SECONDS, asked);
      const time = now();
      const untilMs = time + retryAfterSeconds * 1000;
      const startsHere = reported[operation] <= time;
      reported[operation] = Math.max(reported[operation], untilMs);
      const heldUntil = (await holdOff.state(operation)).untilMs;
      metrics.upstreamHoldOff(Math.max(0, untilMs - Math.max(heldUntil, time)) / 1000);
      await holdOff.hold(operation, untilMs);
      if (startsHere && heldUntil <= time) onHoldOff?.({ operation, call, untilMs, retryAfterSeconds });
      return new UpstreamError('rate_limited', 'upstream asked us to slow down (429)', { ...details, retryAfterSeconds });
    }
    if (status < 500) return new UpstreamError('refused', `upstream refused the request (${status})`, details);
    return new UpstreamError(RETRYABLE_STATUSES.has(status) ? 'unavailable' : 'bad_response', `upstream failed (${status})`, details);
  }

  async function readCapped(response: Response, answered?: { bytes?: number }): Promise<string> {
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
    if (answered) answered.bytes = total;
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
