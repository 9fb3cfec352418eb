import type { Context } from 'hono';
import { LRUCache } from 'lru-cache';
import { ApiError } from '../http/errors.js';
import type { OriginPolicy } from '../http/origins.js';
import type { RateLimiter } from '../http/rate-limit.js';

/** The same address again within this window is accepted without a second upstream call. */
export const REPEAT_WINDOW_MS = 10 * 60 * 1000;
const REPEAT_MAX_ENTRIES = 50_000;

/**
 * CORS does not stop a simple cross-site form post; this does, for JSON and forms alike.
 * A request without `Origin` (not from a browser page) passes.
 */
export function isForbiddenOrigin(c: Context, origins: OriginPolicy): boolean {
  const origin = c.req.header('origin');
  return origin !== undefined && !origins.isAllowed(origin);
}

/** RATE_LIMITED (with Retry-After) when this visitor has posted too often, else undefined. */
export async function rateLimitError(rateLimiter: RateLimiter, clientIp: string | undefined): Promise<ApiError | undefined> {
  const limit = await rateLimiter.hit(clientIp ?? 'unknown');
  return limit.allowed ? undefined : new ApiError('RATE_LIMITED', { retryAfter: limit.retryAfterSeconds });
}

/**
 * A bot fills the hidden field with text; a person leaves it absent or blank. Only text that is
 * not blank counts as filled: a client that sends an empty field as `null`, `false` or `0` (as
 * serialisers of empty form state do) is a person, whose subscription must not be dropped.
 */
export function isHoneypotFilled(input: Record<string, unknown>, honeypotField: string): boolean {
  const honeypot = Object.hasOwn(input, honeypotField) ? input[honeypotField] : undefined;
  return typeof honeypot === 'string' && honeypot.trim() !== '';
}

/** Remembers addresses the upstream settled, so a repeat is answered without calling it again. */
export interface RepeatGuard {
  isRepeat(normalizedEmail: string): boolean | Promise<boolean>;
  remember(normalizedEmail: string): void | Promise<void>;
}

/** Addresses accepted lately (bounded) in this process's memory. */
export function createRepeatGuard(now: () => number): RepeatGuard {
  const recent = new LRUCache<string, true>({ max: REPEAT_MAX_ENTRIES, ttl: REPEAT_WINDOW_MS, perf: { now }, ttlResolution: 0 });
  return {
    isRepeat: (normalizedEmail: string): boolean => recent.has(normalizedEmail),
    remember: (normalizedEmail: string): void => void recent.set(normalizedEmail, true),
  };
}
