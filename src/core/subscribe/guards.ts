import type { Context } from 'hono';
import { LRUCache } from 'lru-cache';
import { ApiError } from '../http/errors.js';
import type { OriginPolicy } from '../http/origins.js';
import type { RateLimiter } from '../http/rate-limit.js';

/** The same address again within this window is accepted without a second upstream call. */
export const REPEAT_WINDOW_MS = 10 * 60 * 1000;

/** CORS does not stop a cross-site form post; this does. A request without `Origin` passes. */
export function isForbiddenOrigin(c: Context, origins: OriginPolicy): boolean {
  const origin = c.req.header('origin');
  return origin !== undefined && !origins.isAllowed(origin);
}

export async function rateLimitError(rateLimiter: RateLimiter, clientIp: string | undefined): Promise<ApiError | undefined> {
  const limit = await rateLimiter.hit(clientIp ?? 'unknown');
  return limit.allowed ? undefined : new ApiError('RATE_LIMITED', { retryAfter: limit.retryAfterSeconds });
}

/** Only text that is not blank counts: serialisers of empty form state send `null`, `false` or `0` for a person. */
export function isHoneypotFilled(input: Record<string, unknown>, honeypotField: string): boolean {
  const honeypot = Object.hasOwn(input, honeypotField) ? input[honeypotField] : undefined;
  return typeof honeypot === 'string' && honeypot.trim() !== '';
}

/** Addresses the upstream settled: a repeat is answered without calling it again. */
export interface RepeatGuard {
  isRepeat(normalizedEmail: string): boolean | Promise<boolean>;
  remember(normalizedEmail: string): void | Promise<void>;
}

export function createRepeatGuard(now: () => number): RepeatGuard {
  const recent = new LRUCache<string, true>({ max: 50_000, ttl: REPEAT_WINDOW_MS, perf: { now }, ttlResolution: 0 });
  return { isRepeat: (email) => recent.has(email), remember: (email) => void recent.set(email, true) };
}
