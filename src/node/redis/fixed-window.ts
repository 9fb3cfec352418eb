import type { RateLimiter } from '../../core/http/rate-limit.js';
import type { RedisKeys } from './keys.js';
import type { RedisLink } from './link.js';

/** One round trip; a counter that lost its expiry gets one again. */
const FIXED_WINDOW_SCRIPT = `
local count = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if count == 1 or ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {count, ttl}`;

/** The subscribe limit for every instance at once; while Redis is unavailable, per instance (`fallback`). */
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
