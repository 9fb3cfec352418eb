import type { Context } from 'hono';
import { LRUCache } from 'lru-cache';
import { ApiError, type ApiErrorOptions, type ErrorCode } from '../http/errors.js';
import type { LogLevel } from '../log.js';

type Settled = 'forwarded' | 'deduped' | 'honeypot' | 'refused_by_upstream' | 'abandoned' | 'timed_out';
type LogFields = Record<string, string | undefined>;
type FailureLog = { outcome: 'rejected' | 'paused' | 'failed'; fields?: LogFields; level?: LogLevel };

export type RecordOutcome = (c: Context, outcome: Settled | FailureLog['outcome'], fields?: LogFields, level?: LogLevel) => void;

export class SubscribeFailure extends ApiError {
  override readonly name = 'SubscribeFailure';
  readonly log: FailureLog;
  constructor(code: ErrorCode, log: FailureLog, options: ApiErrorOptions = {}) {
    super(code, options);
    this.log = log;
  }
}

const ownField = (input: Record<string, unknown>, field: string) => (Object.hasOwn(input, field) ? input[field] : undefined);
const isBlank = (value: unknown) => typeof value === 'string' && value.trim() === '';
/** Only text that is not blank counts: serialisers of empty form state send `null`, `false` or `0` for a person. */
export function isHoneypotFilled(input: Record<string, unknown>, field: string): boolean {
  const honeypot = ownField(input, field);
  return typeof honeypot === 'string' && !isBlank(honeypot);
}

type RateLimitDecision = { allowed: boolean; retryAfterSeconds: number };
type RateWindow = { count: number; startedAt: number };
export type RateLimiter = { hit(key: string): RateLimitDecision | Promise<RateLimitDecision> };

/** Bounded: a flood of new IPs evicts the oldest counters instead of growing memory. */
export function createMemoryRateLimiter({ limit, windowMs, now }: { limit: number; windowMs: number; now: () => number }): RateLimiter {
  const windows = new LRUCache<string, RateWindow>({ max: 50_000, ttl: windowMs, perf: { now }, ttlResolution: 0 });
  return {
    hit(key) {
      const time = now();
      let current = windows.get(key);
      if (!current || time - current.startedAt >= windowMs) windows.set(key, (current = { count: 0, startedAt: time }));
      current.count += 1;
      const retryAfterSeconds = Math.max(1, Math.ceil((current.startedAt + windowMs - time) / 1000));
      return { allowed: current.count <= limit, retryAfterSeconds };
    },
  };
}

export type RateLimitBinding = { limit(options: { key: string }): Promise<{ success: boolean }> };

/** The binding tells no reset time, so Retry-After is its period (wrangler.toml: 60 s). */
export const createBindingRateLimiter = (binding: RateLimitBinding): RateLimiter => ({
  hit: async (key) => ({ allowed: (await binding.limit({ key })).success, retryAfterSeconds: 60 }),
});

export const REPEAT_WINDOW_MS = 10 * 60 * 1000;
export type RepeatGuard = { isRepeat(email: string): boolean | Promise<boolean>; remember(email: string): void | Promise<void> };

export function createRepeatGuard(now: () => number): RepeatGuard {
  const recent = new LRUCache<string, true>({ max: 50_000, ttl: REPEAT_WINDOW_MS, perf: { now }, ttlResolution: 0 });
  return { isRepeat: (email) => recent.has(email), remember: (email) => void recent.set(email, true) };
}

export async function sendWithin<T>(timeoutMs: number, send: (signal: AbortSignal) => Promise<T>, failed: (why: string) => T): Promise<T> {
  try {
    return await send(AbortSignal.timeout(timeoutMs));
  } catch (error) {
    return failed(error instanceof Error && error.name === 'TimeoutError' ? 'timeout' : 'unreachable');
  }
}

export const TURNSTILE_RESPONSE_FIELD = 'cf-turnstile-response';
const OUR_MISTAKES = ['missing-input-secret', 'invalid-input-secret'];

export interface TurnstileChallengeOptions {
  secretKey: string;
  siteKey?: string | undefined;
  verifyUrl: string;
  clientIp: (c: Context) => string | undefined;
  fetch?: typeof globalThis.fetch;
  timeoutMs?: number;
}

const captchaFailed = (captcha: string) =>
  new SubscribeFailure('CAPTCHA_FAILED', { outcome: 'rejected', fields: { reason: 'CAPTCHA_FAILED', captcha } });
const captchaUnavailable = (captcha: string, level: LogLevel = 'warn') =>
  new SubscribeFailure(
    'UPSTREAM_UNAVAILABLE',
    { outcome: 'failed', fields: { reason: 'CAPTCHA_UNAVAILABLE', captcha }, level },
    { message: 'The anti-bot check could not be completed. Try again later.', retryAfter: 5 },
  );

/** Any siteverify. A verifier down or refusing our secret fails closed (503): an outage must not let a bot through. */
export function createTurnstileChallenge(options: TurnstileChallengeOptions) {
  const { secretKey, siteKey, verifyUrl, clientIp, fetch = globalThis.fetch, timeoutMs = 3000 } = options;

  async function siteverify(body: URLSearchParams, signal: AbortSignal): Promise<unknown> {
    const response = await fetch(verifyUrl, { method: 'POST', body, signal });
    if (response.ok) return await response.json();
    await response.body?.cancel();
    return captchaUnavailable(`status ${response.status}`);
  }

  return async function checkTurnstile(c: Context, input: Record<string, unknown>): Promise<void> {
    const token = ownField(input, TURNSTILE_RESPONSE_FIELD);
    if (token === undefined || isBlank(token)) {
      // The form showed no widget (TURNSTILE_MODE=surge, an old form): the site key lets it render one.
      const detail = { path: TURNSTILE_RESPONSE_FIELD, message: 'is required: complete the anti-bot check', ...(siteKey && { siteKey }) };
      const log = { outcome: 'rejected', fields: { reason: 'CAPTCHA_REQUIRED', captcha: 'missing' } } as const;
      throw new SubscribeFailure('CAPTCHA_REQUIRED', log, { details: [detail] });
    }
    if (typeof token !== 'string' || token.length > 2048) throw captchaFailed('malformed');
    const remoteIp = clientIp(c);
    const body = new URLSearchParams({ secret: secretKey, response: token, ...(remoteIp ? { remoteip: remoteIp } : {}) });
    const answer = await sendWithin(timeoutMs, (signal) => siteverify(body, signal), captchaUnavailable);
    if (answer instanceof SubscribeFailure) throw answer;
    const { success, 'error-codes': codes } = (answer ?? {}) as { success?: unknown; 'error-codes'?: unknown };
    if (success === true) return;
    if (codes === undefined && success === undefined) throw captchaUnavailable('not a siteverify answer');
    const list: unknown[] = Array.isArray(codes) ? codes : [];
    const errorCodes = list.filter((code) => typeof code === 'string').join(',');
    if (list.some((code) => OUR_MISTAKES.includes(code as string))) throw captchaUnavailable(errorCodes, 'error');
    if (list.includes('internal-error')) throw captchaUnavailable(errorCodes);
    throw captchaFailed(errorCodes || 'rejected');
  };
}
