import type { SharedEntry, SharedTier } from '../../core/reads/shared-tier.js';
import type { RedisKeys } from './keys.js';
import type { RedisLink } from './link.js';

const REDIS_MAX_VALUE_BYTES = 8 * 1024 * 1024;

/**
 * The shared tier behind each instance's memory (core/reads/shared-tier.ts decides freshness).
 * Never throws: an unavailable Redis is a miss and a skipped write.
 */
export function createRedisSharedTier(
  link: RedisLink,
  keys: RedisKeys,
  options: { maxAgeSeconds: number; maxValueBytes?: number },
): SharedTier {
  const maxValueBytes = options.maxValueBytes ?? REDIS_MAX_VALUE_BYTES;
  const keyOf = (key: string) => `${keys.prefix}cache:${key}`;
  return {
    async get(key) {
      const stored = await link.send(['GET', keyOf(key)]).catch(() => undefined);
      return typeof stored === 'string' ? decode(stored) : undefined;
    },
    async put(key, entry) {
      const value = `${entry.fetchedAt}\n${entry.payload}`;
      // Too large to share: the stale shared copy, if any, must not outlive this fresher value.
      const command =
        Buffer.byteLength(value) > maxValueBytes ? ['DEL', keyOf(key)] : ['SET', keyOf(key), value, 'EX', String(options.maxAgeSeconds)];
      await link.send(command).catch(() => undefined);
    },
    async delete(key) {
      await link.send(['DEL', keyOf(key)]).catch(() => undefined);
    },
    // Held until it expires (the refreshed copy is fresh for a TTL anyway); without Redis, every instance refreshes.
    async claimRefresh(key, ms) {
      const answer = await link.send(['SET', `${keys.prefix}refresh:${key}`, '1', 'NX', 'PX', String(ms)]).catch(() => 'OK');
      return answer === 'OK';
    },
  };
}

/** `<fetchedAt>\n<payload>`; anything else is a miss. */
function decode(stored: string): SharedEntry | undefined {
  const newline = stored.indexOf('\n');
  const fetchedAt = Number(stored.slice(0, newline));
  if (newline < 1 || !Number.isFinite(fetchedAt)) return undefined;
  return { fetchedAt, payload: stored.slice(newline + 1) };
}
