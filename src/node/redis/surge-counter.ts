import { minuteOf, slidingRate, type SurgeCounter } from '../../core/subscribe/surge.js';
import type { RedisKeys } from './keys.js';
import type { RedisLink } from './link.js';

/** The sliding minute still reads the previous fixed one. */
const KEEP_MS = 120_000;

/** Counts this minute's attempt and reads the previous minute's count, in one round trip. */
const COUNT_SCRIPT = `
local count = redis.call('INCR', KEYS[1])
if count == 1 or redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return {count, tonumber(redis.call('GET', KEYS[2]) or '0')}`;

/** One rate and one surge for every instance; while Redis is unavailable, per instance (`fallback`). */
export function createRedisSurgeCounter(link: RedisLink, keys: RedisKeys, fallback: SurgeCounter): SurgeCounter {
  const keyOf = (minute: number) => `${keys.prefix}surge:${minute}`;
  const counts = (reply: unknown): [number, number] | undefined => {
    if (!Array.isArray(reply) || reply.length !== 2) return undefined;
    const [current, previous] = reply.map((value) => Number(value ?? 0));
    return Number.isFinite(current) && Number.isFinite(previous) ? [current!, previous!] : undefined;
  };
  const sharedRate = async (command: string[], at: number) => {
    const reply = counts(await link.send(command).catch(() => undefined));
    return reply && slidingRate(reply[0], reply[1], at);
  };
  return {
    async add(at) {
      const minute = minuteOf(at);
      return (await sharedRate(['EVAL', COUNT_SCRIPT, '2', keyOf(minute), keyOf(minute - 1), String(KEEP_MS)], at)) ?? fallback.add(at);
    },
    async rate(at) {
      const minute = minuteOf(at);
      return (await sharedRate(['MGET', keyOf(minute), keyOf(minute - 1)], at)) ?? fallback.rate(at);
    },
  };
}
