import { createClient } from '@redis/client';
import { createHash, createHmac, randomUUID } from 'node:crypto';
import { createMemoryRateLimiter, type RateLimiter } from '../../core/http/rate-limit.js';
import type { Logger } from '../../core/log.js';
import type { SharedTier } from '../../core/reads/shared-tier.js';
import { createRepeatGuard, REPEAT_WINDOW_MS, type RepeatGuard } from '../../core/subscribe/guards.js';
import { createMemorySurgeCounter, minuteOf, slidingRate, type SurgeCounter } from '../../core/subscribe/surge.js';
import { createMemoryHoldOff, STREAK_FORGOTTEN_AFTER_MS, type HoldOff, type OperationClass } from '../../core/upstream/hold-off.js';
import { createRedisLink, type RedisLink } from './link.js';

// Bumped when a stored format changes, so an old deployment's entries are never read.
const FORMAT_VERSION = 'v1';
const MAX_RECONNECT_DELAY_MS = 2000;
const RATE_WINDOW_MS = 60_000;
const MAX_VALUE_BYTES = 8 * 1024 * 1024;
/** Ticks renew it every second: a watcher that stopped hands over within this long. */
const WATCH_LEASE_MS = 10_000;
/** The sliding minute still reads the previous fixed one. */
const SURGE_KEEP_MS = 120_000;

export type RedisServices = Awaited<ReturnType<typeof connectRedis>>;

/**
 * What several Node instances share through Redis (docs/deployment.md "Several instances"). Never
 * throws on an outage: each service falls back to this instance's memory, or skips the write.
 * Imported by the Node entry only with REDIS_URL, so neither Node without Redis nor the Worker carries the client.
 */
export async function connectRedis(options: {
  url: string;
  /** Per command; a slower answer counts as an outage. */
  timeoutMs: number;
  /** The upstream base URL (or `demo`): keys are namespaced by it and the API key. */
  namespace: string;
  apiKey: string;
  subscribeLimitPerMinute: number;
  /** TTL + stale-if-error. */
  cacheMaxAgeSeconds: number;
  log: Logger;
  now?: () => number;
  /** How long startup waits for a connection before serving from memory. */
  connectWaitMs?: number;
  probeIntervalMs?: number;
  recoveredAfterMs?: number;
  watchLeaseMs?: number;
}) {
  const { timeoutMs, log, now = Date.now } = options;
  const client = createClient({
    url: options.url,
    disableOfflineQueue: true,
    socket: {
      connectTimeout: Math.max(1000, timeoutMs * 10),
      reconnectStrategy: (retries: number) => Math.min(50 * 2 ** Math.min(retries, 10), MAX_RECONNECT_DELAY_MS),
    },
  });
  const link = createRedisLink({ ...options, send: (args) => client.sendCommand(args), now });
  client.on('error', (error: unknown) => link.markDown(error instanceof Error ? error.name : 'connection error'));
  const connected = await Promise.race([
    client.connect().then(
      () => true,
      () => false,
    ),
    new Promise<false>((resolve) => setTimeout(() => resolve(false), options.connectWaitMs ?? 2000).unref()),
  ]);
  if (connected) log.log('info', 'redis_connected', { timeoutMs });
  else link.markDown('no connection at startup');

  // Deployments share entries only when they read the same account. The HMAC secret derives from
  // the API key, so a copy of Redis alone cannot test guessed addresses.
  const digest = createHash('sha256').update(`newsletter-bff shared state\0${options.apiKey}`).digest('hex').slice(0, 16);
  const secret = createHash('sha256').update(`newsletter-bff keyed hash\0${options.apiKey}`).digest();
  const prefix = `newsletter-bff:${FORMAT_VERSION}:${encodeURIComponent(options.namespace)}:${digest}:`;
  /** A key for a personal value (an address, an IP): its HMAC, never the value. */
  const hashed = (kind: string, value: string) =>
    `${prefix}${kind}:${createHmac('sha256', secret).update(value).digest('hex').slice(0, 32)}`;
  const limit = options.subscribeLimitPerMinute;
  const holder = randomUUID();
  const leaseMs = String(options.watchLeaseMs ?? WATCH_LEASE_MS);
  const watchStateKey = `${prefix}watch:state`;

  return {
    rateLimiter: redisRateLimiter(link, hashed, limit, createMemoryRateLimiter({ limit, windowMs: RATE_WINDOW_MS, now })),
    repeatGuard: redisRepeatGuard(link, hashed, createRepeatGuard(now)),
    surgeCounter: redisSurgeCounter(link, prefix, createMemorySurgeCounter()),
    sharedCache: redisSharedTier(link, prefix, options.cacheMaxAgeSeconds),
    holdOff: redisHoldOff(link, prefix, createMemoryHoldOff(now), now),
    // One watcher among the instances (docs/deployment.md "Build hooks"). Redis unavailable: nobody
    // holds the lease, and the next holder announces what changed meanwhile from the stored state.
    watchLease: {
      hold: async () =>
        Number(await link.send(['EVAL', HOLD_LEASE_SCRIPT, '1', `${prefix}watch:lease`, holder, leaseMs]).catch(() => 0)) === 1,
    },
    // No expiry. A failed read or write rejects: the watch skips that tick rather than take it for a first look.
    watchStore: {
      async load() {
        const stored = await link.send(['GET', watchStateKey]);
        return typeof stored === 'string' ? stored : undefined;
      },
      async save(state: string) {
        await link.send(['SET', watchStateKey, state]);
      },
    },
    healthy: link.healthy,
    /** Commands on one connection run in order: once it resolves, every earlier write has landed. */
    ping: () =>
      link.send(['PING']).then(
        () => true,
        () => false,
      ),
    async close() {
      link.close();
      client.destroy();
    },
  };
}

/** One round trip; a counter that lost its expiry gets one again. */
const FIXED_WINDOW_SCRIPT = `
local count = redis.call('INCR', KEYS[1])
if count == 1 or redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return {count, redis.call('PTTL', KEYS[1])}`;

/** The subscribe limit for every instance at once; while Redis is unavailable, per instance (`fallback`). */
function redisRateLimiter(
  link: RedisLink,
  hashed: (kind: string, value: string) => string,
  limit: number,
  fallback: RateLimiter,
): RateLimiter {
  return {
    async hit(key) {
      const reply = await link.send(['EVAL', FIXED_WINDOW_SCRIPT, '1', hashed('rate', key), String(RATE_WINDOW_MS)]).catch(() => undefined);
      if (!Array.isArray(reply) || typeof reply[0] !== 'number' || typeof reply[1] !== 'number') return fallback.hit(key);
      const [count, ttlMs] = reply as [number, number];
      return { allowed: count <= limit, retryAfterSeconds: Math.max(1, Math.ceil(ttlMs / 1000)) };
    },
  };
}

/** Redis holds only the keyed hash; `local` is asked first and always written, so an outage forgets nothing. */
function redisRepeatGuard(link: RedisLink, hashed: (kind: string, value: string) => string, local: RepeatGuard): RepeatGuard {
  return {
    async isRepeat(normalizedEmail) {
      if (await local.isRepeat(normalizedEmail)) return true;
      return (await link.send(['EXISTS', hashed('seen', normalizedEmail)]).catch(() => 0)) === 1;
    },
    async remember(normalizedEmail) {
      await local.remember(normalizedEmail);
      // Awaited, so the next request on any instance sees it.
      await link.send(['SET', hashed('seen', normalizedEmail), '1', 'PX', String(REPEAT_WINDOW_MS)]).catch(() => undefined);
    },
  };
}

/** Counts this minute's attempt and reads the previous minute's count, in one round trip. */
const SURGE_COUNT_SCRIPT = `
local count = redis.call('INCR', KEYS[1])
if count == 1 or redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return {count, tonumber(redis.call('GET', KEYS[2]) or '0')}`;

/** One rate and one surge for every instance; while Redis is unavailable, per instance (`fallback`). */
function redisSurgeCounter(link: RedisLink, prefix: string, fallback: SurgeCounter): SurgeCounter {
  const keysOf = (at: number) => [`${prefix}surge:${minuteOf(at)}`, `${prefix}surge:${minuteOf(at) - 1}`];
  const sharedRate = async (command: string[], at: number) => {
    const reply = await link.send(command).catch(() => undefined);
    if (!Array.isArray(reply) || reply.length !== 2) return undefined;
    const [current, previous] = reply.map((value) => Number(value ?? 0)) as [number, number];
    return Number.isFinite(current) && Number.isFinite(previous) ? slidingRate(current, previous, at) : undefined;
  };
  return {
    add: async (at) => (await sharedRate(['EVAL', SURGE_COUNT_SCRIPT, '2', ...keysOf(at), String(SURGE_KEEP_MS)], at)) ?? fallback.add(at),
    rate: async (at) => (await sharedRate(['MGET', ...keysOf(at)], at)) ?? fallback.rate(at),
  };
}

/**
 * The shared tier behind each instance's memory (core/reads/shared-tier.ts decides freshness),
 * stored as `<fetchedAt>\n<payload>`. An unavailable Redis is a miss and a skipped write.
 */
function redisSharedTier(link: RedisLink, prefix: string, maxAgeSeconds: number): SharedTier {
  const keyOf = (key: string) => `${prefix}cache:${key}`;
  return {
    async get(key) {
      const stored = await link.send(['GET', keyOf(key)]).catch(() => undefined);
      if (typeof stored !== 'string') return undefined;
      const newline = stored.indexOf('\n');
      const fetchedAt = Number(stored.slice(0, newline));
      return newline < 1 || !Number.isFinite(fetchedAt) ? undefined : { fetchedAt, payload: stored.slice(newline + 1) };
    },
    async put(key, entry) {
      const value = `${entry.fetchedAt}\n${entry.payload}`;
      // Too large to share: the stale shared copy, if any, must not outlive this fresher value.
      const command =
        Buffer.byteLength(value) > MAX_VALUE_BYTES ? ['DEL', keyOf(key)] : ['SET', keyOf(key), value, 'EX', String(maxAgeSeconds)];
      await link.send(command).catch(() => undefined);
    },
    async delete(key) {
      await link.send(['DEL', keyOf(key)]).catch(() => undefined);
    },
    // Held until it expires (the refreshed copy is fresh for a TTL anyway); without Redis, every instance refreshes.
    async claimRefresh(key, ms) {
      return (await link.send(['SET', `${prefix}refresh:${key}`, '1', 'NX', 'PX', String(ms)]).catch(() => 'OK')) === 'OK';
    },
  };
}

/** Keeps the later of the stored and the given time, and expires with it. */
const HOLD_UNTIL_SCRIPT = `
if tonumber(ARGV[1]) > tonumber(redis.call('GET', KEYS[1]) or '0') then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) end
return 1`;

/** The in-memory `failed`, on `count:lastFailedAt`. */
const FAILED_SCRIPT = `
local count, last = string.match(redis.call('GET', KEYS[1]) or '', '^(%d+):(-?%d+)$')
count, last = tonumber(count) or 0, tonumber(last) or -1
local started, failed = tonumber(ARGV[1]), tonumber(ARGV[2])
if count == 0 or started > last then count = count + 1 end
if failed > last then last = failed end
redis.call('SET', KEYS[1], string.format('%d:%d', count, last), 'PX', ARGV[3])
return count`;

/**
 * Shared: the upstream limits the key, not the process, and fails for every instance alike. The
 * instance's own hold-off (`local`) is kept too, so an outage of Redis never shortens one.
 */
function redisHoldOff(link: RedisLink, prefix: string, local: HoldOff, now: () => number): HoldOff {
  const keyOf = (operation: OperationClass) => `${prefix}hold-off:${operation}`;
  const streakKeyOf = (operation: OperationClass) => `${prefix}hold-off:${operation}:streak`;
  const larger = (mine: number, stored: number) => (Number.isFinite(stored) ? Math.max(mine, stored) : mine);
  return {
    async state(operation) {
      const mine = await local.state(operation);
      const stored = await link.send(['MGET', keyOf(operation), streakKeyOf(operation)]).catch(() => undefined);
      if (!Array.isArray(stored)) return mine;
      const [until, streak] = stored as (string | null)[];
      return {
        untilMs: larger(mine.untilMs, Number(until ?? 0)),
        streak: larger(mine.streak, Number(String(streak ?? '0').split(':')[0])),
      };
    },
    async hold(operation, untilMs) {
      await local.hold(operation, untilMs);
      const ttlMs = Math.max(1, Math.ceil(untilMs - now()));
      await link.send(['EVAL', HOLD_UNTIL_SCRIPT, '1', keyOf(operation), String(Math.ceil(untilMs)), String(ttlMs)]).catch(() => undefined);
    },
    async failed(operation, startedAtMs, failedAtMs) {
      const mine = await local.failed(operation, startedAtMs, failedAtMs);
      const args = [String(Math.floor(startedAtMs)), String(Math.ceil(failedAtMs)), String(STREAK_FORGOTTEN_AFTER_MS)];
      return larger(mine, Number(await link.send(['EVAL', FAILED_SCRIPT, '1', streakKeyOf(operation), ...args]).catch(() => Number.NaN)));
    },
    async answered(operation) {
      await local.answered(operation);
      await link.send(['DEL', streakKeyOf(operation)]).catch(() => undefined);
    },
  };
}

/** Takes the lease when free, renews it when held by this instance; 1 when held after. */
const HOLD_LEASE_SCRIPT = `
local holder = redis.call('GET', KEYS[1])
if holder ~= false and holder ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1`;
