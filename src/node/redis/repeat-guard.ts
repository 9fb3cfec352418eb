import type { RepeatGuard } from '../../core/subscribe/guards.js';
import type { RedisKeys } from './keys.js';
import type { RedisLink } from './link.js';

/** Redis holds only the keyed hash; `local` is asked first and always written, so an outage forgets nothing. */
export function createRedisRepeatGuard(link: RedisLink, keys: RedisKeys, options: { windowMs: number; local: RepeatGuard }): RepeatGuard {
  const { windowMs, local } = options;
  return {
    async isRepeat(normalizedEmail) {
      if (await local.isRepeat(normalizedEmail)) return true;
      try {
        return (await link.send(['EXISTS', keys.hashed('seen', normalizedEmail)])) === 1;
      } catch {
        return false;
      }
    },
    async remember(normalizedEmail) {
      await local.remember(normalizedEmail);
      // Awaited, so the next request on any instance sees it.
      await link.send(['SET', keys.hashed('seen', normalizedEmail), '1', 'PX', String(windowMs)]).catch(() => undefined);
    },
  };
}
