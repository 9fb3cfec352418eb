import { randomUUID } from 'node:crypto';
import type { WatchLease, WatchStore } from '../../core/watch/archive-watch.js';
import type { RedisKeys } from './keys.js';
import type { RedisLink } from './link.js';

/** Takes the lease when free, renews it when held by this instance; 1 when held after. */
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

/** Ticks renew it every second: a watcher that stopped hands over within this long. */
const WATCH_LEASE_MS = 10_000;

/**
 * One watcher among the instances (docs/deployment.md "Build hooks"). Redis unavailable: nobody
 * holds the lease, and the next holder announces what changed meanwhile from the stored state.
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

/** No expiry. A failed read or write rejects: the watch skips that tick rather than take it for a first look. */
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
