import type { RateLimiter } from '../../core/http/rate-limit.js';
import type { RedisKeys } from './keys.js';
import type { RedisLink } from './link.js';

/**
 * A fixed window counted in one round trip: the first hit of a window sets its expiry, and a
 * counter that lost its expiry somehow gets one again (never a key that lives for ever).
 */
const FIXED_WINDOW_SCRIPT = `
local count = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if count == 1 or ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {count, ttl}`;

/**
 * The subscribe limit counted in Redis, for every instance at once, with the same numbers as
 * the in-memory limiter. While Redis is unavailable each instance counts in its own memory
 * (`fallback`): the limit then holds per instance, as it does without Redis.
 */
export function createRedisRateLimiter(
  link: RedisLink,
  keys: RedisKeys,
  options: { limit: number; windowMs: number; fallback: RateLimiter },
): RateLimiter {
  const { limit, windowMs, fallback } = options;
  return {
    async hit(key) {
      let reply: unknown;
      try {
        reply = await link.send(['EVAL', FIXED_WINDOW_SCRIPT, '1', keys.hashed('rate', key), String(windowMs)]);
      } catch {
        return fallback.hit(key);
      }
      if (!Array.isArray(reply) || typeof reply[0] !== 'number' || typeof reply[1] !== 'number') return fallback.hit(key);
      const [count, ttlMs] = reply as [number, number];
      return { allowed: count <= limit, retryAfterSeconds: Math.max(1, Math.ceil(ttlMs / 1000)) };
    },
  };
}
