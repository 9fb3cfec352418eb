import { randomUUID } from 'node:crypto';
import type { WatchLease, WatchStore } from '../../core/watch/archive-watch.js';
import type { RedisKeys } from './keys.js';
import type { RedisLink } from './link.js';

/** Takes the lease when it is free, renews it when this instance holds it; 1 when it holds it after. */
const HOLD_LEASE_SCRIPT = `
local holder = redis.call('GET', KEYS[1])
if holder == false then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
if holder == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0`;

/**
 * How long the watcher's lease lasts without a renewal: ticks renew it every second, so a
 * watcher that stopped (crashed, or cut off from Redis) hands over within this long.
 */
export const WATCH_LEASE_MS = 10_000;

/**
 * One watcher among the instances sharing Redis (docs/deployment.md "Build hooks"): the lease is
 * a key holding the watcher's random id, taken with SET when free and renewed by its holder
 * only (a script: the check and the renewal are one step). Redis unavailable: nobody holds it,
 * so no instance calls the hook on its own; the state below remembers what was announced, and
 * the watcher that takes the lease next announces what changed meanwhile.
 */
export function createRedisWatchLease(link: RedisLink, keys: RedisKeys, options: { leaseMs?: number } = {}): WatchLease {
  const holder = randomUUID();
  const leaseMs = String(options.leaseMs ?? WATCH_LEASE_MS);
  return {
    async hold() {
      const answer = await link.send(['EVAL', HOLD_LEASE_SCRIPT, '1', `${keys.prefix}watch:lease`, holder, leaseMs]).catch(() => 0);
      return Number(answer) === 1;
    },
  };
}

/**
 * The watch's state in Redis, so the instance that watches next goes on from it. No expiry: a
 * snapshot of the archive, a few dozen bytes an issue. A failed read or write rejects: the watch
 * skips that tick rather than take an empty state for a first look.
 */
export function createRedisWatchStore(link: RedisLink, keys: RedisKeys): WatchStore {
  const key = `${keys.prefix}watch:state`;
  return {
    async load() {
      const stored = await link.send(['GET', key]);
      return typeof stored === 'string' ? stored : undefined;
    },
    async save(state) {
      await link.send(['SET', key, state]);
    },
  };
}
