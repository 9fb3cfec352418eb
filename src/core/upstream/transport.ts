import { noopMetrics, type Metrics } from '../metrics.js';
import type * as z from '../zod.js';
import {
  DEFAULT_RETRY_AFTER_SECONDS,
  isSuccessStatus,
  MAX_RESPONSE_BYTES,
  MAX_RETRY_AFTER_SECONDS,
  NOT_FOUND_STATUS,
} from './assumptions.js';
import { UpstreamError } from './upstream-error.js';
import { backoffPauseMs, createMemoryHoldOff, type HoldOff, type HoldOffStart, type HoldState, type OperationClass } from './hold-off.js';

/*
 * A small JSON-over-HTTP transport in the manner of unjs/ofetch's `$fetch` and `FetchError`:
 * `fetch` injected, `AbortSignal.timeout`, a commented set of retryable statuses, payload methods
 * not retried blindly, one error class that keeps `cause`. Written here rather than taken from
 * ofetch because we also need what it lacks: a capped body read, a hold-off after 429 per class
 * of call and a growing pause after failed reads (hold-off.ts), and errors whose message never
 * carries the upstream's text. It knows no paths;
 * what the upstream leaves unshown about statuses and sizes it reads from assumptions.ts.
 */

export { UpstreamError, type UpstreamErrorKind } from './upstream-error.js';

/**
 * Statuses retried within the budget: the transient failures of a gateway or of the service.
 * Not 501 or 505 (they will not get better), not 429 (held off, never hammered), not 408 or 409
 * (ofetch retries those; the upstream documents neither, so they stay refusals).
 */
const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([
  500, // Internal Server Error: the service failed this once
  502, // Bad Gateway: a proxy in front of it could not reach it
  503, // Service Unavailable: overloaded or restarting
  504, // Gateway Timeout: a proxy in front of it gave up waiting
]);

/** Not Modified: the answer to a conditional request whose validators still match (RFC 9110 §15.4.5). */
const NOT_MODIFIED = 304;

/** What a timed-out call tells our caller to wait: a guess of our own, short enough to retry soon. */
const TIMEOUT_RETRY_AFTER_SECONDS = 5;

/** An error code worth keeping for the logs: upper-case and short, so never free text or a key. */
const WELL_FORMED_CODE = /^[A-Z][A-Z0-9_]{0,63}$/;

export type UpstreamMethod = 'GET' | 'POST';

export interface TransportOptions {
  timeoutMs: number;
  fetch?: typeof globalThis.fetch;
  /** Bodies above this are refused before they are buffered. */
  maxResponseBytes?: number;
  /** Retries after the first attempt, for GETs (docs/contract.md "Upstream calls": a small budget). */
  getRetries?: number;
  /** Retries after the first attempt, for POSTs: none unless the operation is safe to repeat. */
  postRetries?: number;
  baseDelayMs?: number;
  maxDelayMs?: number;
  random?: () => number;
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
  /** Sent on every call, besides Accept (and Content-Type with a body): the credentials, say. */
  headers?: Readonly<Record<string, string>>;
  /** Reads the API's error code out of an error body; the status alone decides without it. */
  errorCodeOf?: (body: unknown) => string | undefined;
  /** An error code that means "not found" at any 4xx status, for an API that says so by code. */
  notFoundCode?: string;
  /** Where hold-offs after a 429 and the pauses after failed reads are kept (default: in this process's memory). */
  holdOff?: HoldOff;
  /**
   * A call held off for at most this long waits for the hold-off to end, then goes out, instead
   * of failing at once (default 0: a visitor is served a stale copy rather than kept waiting).
   * `check`, a one-shot probe, waits out the short pauses between its calls.
   */
  waitWhenHeldOffMs?: number;
  /** A 429 started a hold-off (not called again while it lasts): for one log line per hold-off. */
  onHoldOff?: (start: HoldOffStart) => void;
  /** Told of each retry and of the hold-off a 429 adds (no-op by default). */
  metrics?: Pick<Metrics, 'upstreamRetry' | 'upstreamHoldOff'>;
}

export interface TransportRequest<T> {
  method: UpstreamMethod;
  url: URL;
  /** The whole success body must match it; its parsed value is what `request` returns. */
  schema: z.ZodMiniType<T>;
  /** Sent as JSON. */
  body?: unknown;
  /** Whose hold-off applies: by default a GET is a read and a POST a write. */
  operation?: OperationClass;
  /** Validators of an earlier answer, sent as If-None-Match / If-Modified-Since (RFC 9110 §13.1). */
  conditional?: Validators | undefined;
  /** What a 304 to `conditional` returns (without it a 304 is a redirect-class failure). */
  notModified?: () => T;
  /** Told the validators of a success answer (an ETag, a Last-Modified), when it has any. */
  onValidators?: (validators: Validators) => void;
  /** Told the size of a success body, in bytes (for the archive's page size and figures). */
  onBytes?: (bytes: number) => void;
  /**
   * Reads a success body's text in place of JSON.parse (which it must match for what it keeps,
   * throwing as it does on text that is not JSON): to leave out what the schema would strip.
   */
  parse?: (text: string) => unknown;
}

/** An answer's validators, to be sent back when asking for the same resource again. */
export interface Validators {
  etag?: string | undefined;
  lastModified?: string | undefined;
}

/** A body over the cap (an UpstreamError like any other): the caller may ask for less (a list page with fewer rows). */
export class ResponseTooLarge extends UpstreamError {
  /** The body's declared length, when it had a Content-Length. */
  readonly declaredBytes: number | undefined;
  constructor(status: number, maxResponseBytes: number, declaredBytes?: number) {
    super('bad_response', `upstream ${status} body exceeds ${maxResponseBytes} bytes`, { status });
    this.declaredBytes = declaredBytes;
  }
}

export type Transport = <T>(request: TransportRequest<T>) => Promise<T>;

/** One call as the hold-off sees it. */
interface Call {
  method: UpstreamMethod;
  url: URL;
  operation: OperationClass;
}

const defaultSleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Creates the one function that makes an HTTP call to the upstream and reads its JSON answer. */
export function createTransport(options: TransportOptions): Transport {
  const {
    timeoutMs,
    fetch: fetchImpl = globalThis.fetch.bind(globalThis),
    maxResponseBytes = MAX_RESPONSE_BYTES,
    getRetries = 2,
    postRetries = 0,
    baseDelayMs = 100,
    maxDelayMs = 1000,
    random = Math.random,
    sleep = defaultSleep,
    now = Date.now,
    headers: fixedHeaders = {},
    errorCodeOf = () => undefined,
    notFoundCode,
    holdOff = createMemoryHoldOff(now),
    onHoldOff,
    metrics = noopMetrics,
    waitWhenHeldOffMs = 0,
  } = options;
  /**
   * Per class, the call out while its streak runs: while it finds out whether the upstream is back,
   * the others wait for its answer (a cold page needing two reads is not refused for the second).
   */
  const probing = new Map<OperationClass, Promise<void>>();
  /** The latest hold-off reported per class: calls that went out together and all met the 429 report it once. */
  const reported: Record<OperationClass, number> = { read: 0, write: 0 };

  return async function request<T>(options: TransportRequest<T>): Promise<T> {
    const { method, url, operation } = options;
    const call: Call = { method, url, operation: operation ?? (method === 'GET' ? 'read' : 'write') };
    // Only reads back off after failures: a subscribe is one person's attempt, answered as it goes.
    const backsOff = call.operation === 'read';
    let held = await admit(call);
    const probe = backsOff && held.streak > 0 ? probing.get(call.operation) : undefined;
    if (probe !== undefined) {
      await probe;
      // Back: the streak has ended. Still failing: the probe's failure began a new pause.
      held = await admit(call);
      if (held.streak > 0) throw heldOff(now(), held.streak);
    }
    const failing = backsOff && held.streak > 0;
    let probed = () => {};
    if (failing) probing.set(call.operation, new Promise<void>((resolve) => (probed = resolve)));
    // While failures run, the pause between calls is the retry: one attempt each, never a burst.
    const retries = failing ? 0 : method === 'GET' ? getRetries : postRetries;
    const startedAt = now();
    try {
      for (let attempt = 0; ; attempt += 1) {
        try {
          const answer = await attemptOnce(call, options);
          if (failing) await holdOff.answered(call.operation);
          return answer;
        } catch (error) {
          const retryable = error instanceof UpstreamError && error.kind === 'unavailable' && attempt < retries;
          if (!retryable) {
            if (backsOff) await settleStreak(call, error, startedAt, failing);
            throw error;
          }
          metrics.upstreamRetry();
          // Exponential backoff with full jitter (spreads retries of many instances apart).
          const ceiling = Math.min(maxDelayMs, baseDelayMs * 2 ** attempt);
          await sleep(Math.round(random() * ceiling));
          held = await holdOff.state(call.operation);
          // A 429 another call met meanwhile holds this retry off too. A pause after failures
          // does not: it holds off the calls that begin after it, and this one began before.
          if (held.untilMs > now() && held.streak === 0) throw heldOff(held.untilMs, held.streak);
        }
      }
    } finally {
      if (failing) {
        probing.delete(call.operation);
        probed();
      }
    }
  };

  /**
   * The hold-off state a call goes out under; throws the held-off error while calls of its class
   * are held off (after a 429: until Retry-After; after failures: until the pause ends), unless
   * the pause is short enough to wait out (`waitWhenHeldOffMs`).
   */
  async function admit(call: Call): Promise<HoldState> {
    const held = await holdOff.state(call.operation);
    const waitMs = held.untilMs - now();
    if (waitMs <= 0) return held;
    if (waitMs > waitWhenHeldOffMs) throw heldOff(held.untilMs, held.streak);
    await sleep(waitMs);
    return held;
  }

  function heldOff(untilMs: number, streak: number): UpstreamError {
    const retryAfterSeconds = Math.max(1, Math.ceil((untilMs - now()) / 1000));
    const held = { retryAfterSeconds, heldUntilMs: untilMs };
    return streak > 0
      ? new UpstreamError('rate_limited', `backing off after ${streak} failed rounds of upstream calls`, { ...held, heldOffBy: 'backoff' })
      : new UpstreamError('rate_limited', 'holding off after the upstream asked us to slow down', { ...held, heldOffBy: 'retry_after' });
  }

  /**
   * After a read's last attempt: a failure that says the upstream is failing (docs/upstream.md
   * "Backing off a failing upstream") grows the streak and pauses this class of call; an answer
   * that says it is there (a not-found, a refusal) ends the streak; anything else changes nothing.
   */
  async function settleStreak(call: Call, error: unknown, startedAt: number, failing: boolean): Promise<void> {
    if (isUpstreamFailing(error)) {
      const failedAt = now();
      const streak = await holdOff.failed(call.operation, startedAt, failedAt);
      await holdOff.hold(call.operation, failedAt + backoffPauseMs(streak, random));
    } else if (failing && error instanceof UpstreamError && ANSWERED_KINDS.has(error.kind)) {
      await holdOff.answered(call.operation);
    }
  }

  async function attemptOnce<T>(call: Call, options: TransportRequest<T>): Promise<T> {
    const { method, url } = call;
    const { schema, body, conditional, notModified } = options;
    // Built from scratch on every call: no header of the visitor's request is ever passed on.
    const headers: Record<string, string> = { ...fixedHeaders, Accept: 'application/json' };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    if (conditional?.etag !== undefined) headers['If-None-Match'] = conditional.etag;
    if (conditional?.lastModified !== undefined) headers['If-Modified-Since'] = conditional.lastModified;
    let response: Response;
    try {
      response = await fetchImpl(url, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
        // 'manual', not 'follow': a redirect must never carry the key to another host.
        // ('error' would say the same, but Workers' fetch does not accept it.)
        redirect: 'manual',
      });
    } catch (error) {
      throw transportError(error);
    }

    const { status } = response;
    if (status === NOT_MODIFIED && conditional !== undefined && notModified !== undefined) {
      await discard(response);
      return notModified();
    }
    if (status >= 300 && status < 400) {
      await discard(response);
      throw new UpstreamError('bad_response', `upstream answered with a redirect (${status}); not followed`, { status });
    }
    if (!isSuccessStatus(status)) throw await failureFromResponse(response, call);
    const validators = { etag: response.headers.get('etag') ?? undefined, lastModified: response.headers.get('last-modified') ?? undefined };
    // The body's text is not named: it is let go as soon as it is parsed (a page may be megabytes).
    const parsed = schema.safeParse(parseJson(await readCapped(response, status, options.onBytes), status, options.parse));
    if (validators.etag !== undefined || validators.lastModified !== undefined) options.onValidators?.(validators);
    if (!parsed.success) {
      throw new UpstreamError('bad_response', `upstream ${status} body does not match the expected shape`, {
        status,
        cause: parsed.error,
      });
    }
    return parsed.data;
  }

  async function failureFromResponse(response: Response, call: Call): Promise<UpstreamError> {
    const { status } = response;
    let upstreamCode: string | undefined;
    try {
      const code = errorCodeOf(await readJson(response, status));
      upstreamCode = code !== undefined && WELL_FORMED_CODE.test(code) ? code : undefined;
    } catch {
      // The status alone decides the kind; an unreadable error body changes nothing.
    }
    const details = { status, upstreamCode };
    // Only 401 is documented for a missing or invalid key. A 403 (permission scopes are not
    // shown) is a refusal like any other 4xx, so subscribe cannot reveal who is on the list.
    if (status === 401) return new UpstreamError('auth', 'upstream rejected the API key (401)', details);
    if (status === NOT_FOUND_STATUS || (status < 500 && upstreamCode !== undefined && upstreamCode === notFoundCode)) {
      return new UpstreamError('not_found', `upstream answered not found (${status})`, details);
    }
    if (status === 422) return new UpstreamError('validation', 'upstream rejected the request as invalid (422)', details);
    if (status === 429) {
      const retryAfterSeconds = Math.min(
        MAX_RETRY_AFTER_SECONDS,
        parseRetryAfter(response.headers.get('retry-after'), now()) ?? DEFAULT_RETRY_AFTER_SECONDS,
      );
      await holdOffAfter429(call, retryAfterSeconds);
      return new UpstreamError('rate_limited', 'upstream asked us to slow down (429)', { ...details, retryAfterSeconds });
    }
    if (RETRYABLE_STATUSES.has(status)) return new UpstreamError('unavailable', `upstream failed (${status})`, details);
    if (status >= 500) return new UpstreamError('bad_response', `upstream failed (${status})`, details);
    return new UpstreamError('refused', `upstream refused the request (${status})`, details);
  }

  /** Starts (or lengthens) the hold-off of this call's class; only a start is reported. */
  async function holdOffAfter429(call: Call, retryAfterSeconds: number): Promise<void> {
    const time = now();
    const untilMs = time + retryAfterSeconds * 1000;
    const startsHere = reported[call.operation] <= time;
    reported[call.operation] = Math.max(reported[call.operation], untilMs);
    const heldUntil = (await holdOff.state(call.operation)).untilMs;
    metrics.upstreamHoldOff(Math.max(0, untilMs - Math.max(heldUntil, time)) / 1000);
    await holdOff.hold(call.operation, untilMs);
    if (startsHere && heldUntil <= time) {
      onHoldOff?.({ operation: call.operation, call: `${call.method} ${call.url.pathname}`, untilMs, retryAfterSeconds });
    }
  }

  async function readJson(response: Response, status: number): Promise<unknown> {
    return parseJson(await readCapped(response, status), status);
  }

  function parseJson(text: string, status: number, parse: (text: string) => unknown = JSON.parse): unknown {
    try {
      return parse(text);
    } catch (error) {
      throw new UpstreamError('bad_response', `upstream ${status} body is not JSON`, { status, cause: error });
    }
  }

  async function readCapped(response: Response, status: number, onBytes?: (bytes: number) => void): Promise<string> {
    const declared = Number(response.headers.get('content-length') ?? Number.NaN);
    const tooLarge = () => new ResponseTooLarge(status, maxResponseBytes, Number.isFinite(declared) ? declared : undefined);
    if (declared > maxResponseBytes) {
      await discard(response);
      throw tooLarge();
    }
    if (!response.body) return '';
    const reader = response.body.getReader();
    // Decoded as it arrives: a large body is held once, as text, never also as bytes.
    const decoder = new TextDecoder('utf-8', { fatal: true });
    const decode = (bytes: Uint8Array | undefined, stream: boolean): string => {
      try {
        return decoder.decode(bytes, { stream });
      } catch (error) {
        throw new UpstreamError('bad_response', `upstream ${status} body is not valid UTF-8`, { status, cause: error });
      }
    };
    const parts: string[] = [];
    let total = 0;
    try {
      // Bounded: every turn adds a chunk to `total`, and passing the cap ends the loop.
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        total += value.byteLength;
        if (total > maxResponseBytes) {
          await reader.cancel().catch(() => undefined);
          throw tooLarge();
        }
        parts.push(decode(value, true));
      }
      parts.push(decode(undefined, false));
    } catch (error) {
      if (error instanceof UpstreamError) throw error;
      throw transportError(error);
    }
    onBytes?.(total);
    return parts.join('');
  }

  function transportError(error: unknown): UpstreamError {
    const name = error instanceof Error ? error.name : '';
    if (name === 'TimeoutError' || name === 'AbortError') {
      return new UpstreamError('timeout', `upstream did not answer within ${timeoutMs} ms`, {
        retryAfterSeconds: TIMEOUT_RETRY_AFTER_SECONDS,
        cause: error,
      });
    }
    return new UpstreamError('unavailable', 'could not reach the upstream', { cause: error });
  }
}

/** Failures that leave no doubt the upstream answered: the call was wrong, not the upstream down. */
const ANSWERED_KINDS: ReadonlySet<UpstreamError['kind']> = new Set(['not_found', 'validation', 'refused']);

/**
 * Whether `error` says the upstream is failing rather than that one answer was wrong: a 5xx, no
 * answer (a network error or a timeout), or our key refused. A 429 has its own hold-off; a body
 * of the wrong shape or size (a malformed issue, a page re-asked smaller) is that resource's.
 */
function isUpstreamFailing(error: unknown): boolean {
  if (!(error instanceof UpstreamError) || error.heldOffBy !== undefined) return false;
  return error.kind === 'unavailable' || error.kind === 'timeout' || error.kind === 'auth' || (error.status ?? 0) >= 500;
}

/** Seconds from a `Retry-After` header: delta-seconds or an HTTP date (RFC 9110 §10.2.3). */
export function parseRetryAfter(value: string | null, nowMs: number): number | undefined {
  if (!value) return undefined;
  const trimmed = value.trim();
  if (/^\d{1,9}$/.test(trimmed)) return Math.max(1, Number(trimmed));
  // Only an IMF-fixdate is read as a date: Date.parse would take '-5' or '1.5' for a year.
  if (!/^[A-Za-z]{3}, \d{2} [A-Za-z]{3} \d{4} \d{2}:\d{2}:\d{2} GMT$/.test(trimmed)) return undefined;
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return undefined;
  return Math.max(1, Math.ceil((date - nowMs) / 1000));
}

async function discard(response: Response): Promise<void> {
  await response.body?.cancel().catch(() => undefined);
}
