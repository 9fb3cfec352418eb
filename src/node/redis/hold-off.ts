import type { HoldOff, OperationClass } from '../../core/upstream/hold-off.js';
import type { RedisKeys } from './keys.js';
import type { RedisLink } from './link.js';

/** Keeps the later of the stored and the given time, and expires with it. */
const HOLD_UNTIL_SCRIPT = `
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
local untilMs = tonumber(ARGV[1])
if untilMs > current then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
end
return 1`;

/**
 * The upstream hold-off shared by every instance: the upstream limits the API key, not the
 * process, so one instance's 429 holds off all of them until its `Retry-After`. The instance's
 * own hold-off (`local`) is always kept too, so an outage of Redis never shortens one.
 */
export function createRedisHoldOff(link: RedisLink, keys: RedisKeys, options: { local: HoldOff; now: () => number }): HoldOff {
  const { local, now } = options;
  // One key per class of call, as the in-memory hold-off keeps them apart (src/core/upstream/hold-off.ts).
  const keyOf = (operation: OperationClass) => `${keys.prefix}hold-off:${operation}`;
  return {
    async until(operation) {
      const mine = await local.until(operation);
      try {
        const stored = Number(await link.send(['GET', keyOf(operation)]));
        return Number.isFinite(stored) ? Math.max(mine, stored) : mine;
      } catch {
        return mine;
      }
    },
    async hold(operation, untilMs) {
      await local.hold(operation, untilMs);
      const ttlMs = Math.max(1, Math.ceil(untilMs - now()));
      await link.send(['EVAL', HOLD_UNTIL_SCRIPT, '1', keyOf(operation), String(Math.ceil(untilMs)), String(ttlMs)]).catch(() => undefined);
    },
  };
}
