import { STREAK_FORGOTTEN_AFTER_MS, type HoldOff, type OperationClass } from '../../core/upstream/hold-off.js';
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

/** The in-memory `failed`, on `count:lastFailedAt`. */
const FAILED_SCRIPT = `
local raw = redis.call('GET', KEYS[1])
local count, last = 0, -1
if raw then
  local sep = string.find(raw, ':', 1, true)
  count = tonumber(string.sub(raw, 1, sep - 1)) or 0
  last = tonumber(string.sub(raw, sep + 1)) or -1
end
local started, failed = tonumber(ARGV[1]), tonumber(ARGV[2])
if count == 0 or started > last then count = count + 1 end
if failed > last then last = failed end
redis.call('SET', KEYS[1], string.format('%d:%d', count, last), 'PX', ARGV[3])
return count`;

/**
 * Shared: the upstream limits the key, not the process, and fails for every instance alike. The
 * instance's own hold-off (`local`) is kept too, so an outage of Redis never shortens one.
 */
export function createRedisHoldOff(link: RedisLink, keys: RedisKeys, options: { local: HoldOff; now: () => number }): HoldOff {
  const { local, now } = options;
  const keyOf = (operation: OperationClass) => `${keys.prefix}hold-off:${operation}`;
  const streakKeyOf = (operation: OperationClass) => `${keys.prefix}hold-off:${operation}:streak`;
  return {
    async state(operation) {
      const mine = await local.state(operation);
      try {
        const [until, streak] = (await link.send(['MGET', keyOf(operation), streakKeyOf(operation)])) as (string | null)[];
        const storedUntil = Number(until ?? 0);
        const storedStreak = Number(String(streak ?? '0').split(':')[0]);
        return {
          untilMs: Number.isFinite(storedUntil) ? Math.max(mine.untilMs, storedUntil) : mine.untilMs,
          streak: Number.isFinite(storedStreak) ? Math.max(mine.streak, storedStreak) : mine.streak,
        };
      } catch {
        return mine;
      }
    },
    async hold(operation, untilMs) {
      await local.hold(operation, untilMs);
      const ttlMs = Math.max(1, Math.ceil(untilMs - now()));
      await link.send(['EVAL', HOLD_UNTIL_SCRIPT, '1', keyOf(operation), String(Math.ceil(untilMs)), String(ttlMs)]).catch(() => undefined);
    },
    async failed(operation, startedAtMs, failedAtMs) {
      const mine = await local.failed(operation, startedAtMs, failedAtMs);
      try {
        const args = [String(Math.floor(startedAtMs)), String(Math.ceil(failedAtMs)), String(STREAK_FORGOTTEN_AFTER_MS)];
        const shared = Number(await link.send(['EVAL', FAILED_SCRIPT, '1', streakKeyOf(operation), ...args]));
        return Number.isFinite(shared) ? Math.max(mine, shared) : mine;
      } catch {
        return mine;
      }
    },
    async answered(operation) {
      await local.answered(operation);
      await link.send(['DEL', streakKeyOf(operation)]).catch(() => undefined);
    },
  };
}
