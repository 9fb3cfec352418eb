import type { RepeatGuard } from '../../core/subscribe/guards.js';
import type { RedisKeys } from './keys.js';
import type { RedisLink } from './link.js';

/**
 * The repeat guard shared by every instance: an address one instance forwarded is a repeat on
 * all of them for the window. Redis holds only the address's keyed hash. This instance's own
 * memory (`local`) is asked first and always written, so an outage forgets nothing it saw.
 */
export function createRedisRepeatGuard(
  link: RedisLink,
  keys: RedisKeys,
  options: { windowMs: number; local: RepeatGuard },
): RepeatGuard {
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
      // Awaited (within the link's timeout) so the next request, on any instance, sees it.
      await link.send(['SET', keys.hashed('seen', normalizedEmail), '1', 'PX', String(windowMs)]).catch(() => undefined);
    },
  };
}
