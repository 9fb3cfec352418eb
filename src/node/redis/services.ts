import { createClient } from '@redis/client';
import { createHash, createHmac, randomUUID } from 'node:crypto';
import type { Logger } from '../../core/log.js';
import type { SharedTier } from '../../core/reads/shared-tier.js';
import { createMemoryRateLimiter, type RateLimiter } from '../../core/subscribe/guards.js';
import { createRepeatGuard, REPEAT_WINDOW_MS, type RepeatGuard } from '../../core/subscribe/guards.js';
import { createMemorySurgeCounter, minuteOf, slidingRate, type SurgeCounter } from '../../core/subscribe/surge.js';
import { createMemoryHoldOff, STREAK_FORGOTTEN_AFTER_MS, type HoldOff, type OperationClass } from '../../core/upstream/hold-off.js';

// Bumped when a stored format changes, so an old deployment's entries are never read.
const FORMAT_VERSION = 'v1';
const MAX_RECONNECT_DELAY_MS = 2000;
const RATE_WINDOW_MS = 60_000;
const MAX_VALUE_BYTES = 8 * 1024 * 1024;
const WATCH_LEASE_MS = 10_000; // renewed each tick: a watcher that stopped hands over within this long
const SURGE_KEEP_MS = 120_000; // the sliding minute still reads the previous fixed one

/** A fixed-window count in one round trip (a counter that lost its expiry gets one again); also reads KEYS[2]. */
const COUNT_SCRIPT = `
local count = redis.call('INCR', KEYS[1])
if count == 1 or redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return {count, redis.call('PTTL', KEYS[1]), tonumber(redis.call('GET', KEYS[2]) or '0')}`;

/** Keeps the later of the stored and the given time, and expires with it. */
const HOLD_UNTIL_SCRIPT = `
if tonumber(ARGV[1]) > tonumber(redis.call('GET', KEYS[1]) or '0') then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) end
return 1`;

// The in-memory hold-off's `failed`, on `count:lastFailedAt`.
const FAILED_SCRIPT = `
local count, last = string.match(redis.call('GET', KEYS[1]) or '', '^(%d+):(-?%d+)$')
count, last = tonumber(count) or 0, tonumber(last) or -1
local started, failed = tonumber(ARGV[1]), tonumber(ARGV[2])
if count == 0 or started > last then count = count + 1 end
if failed > last then last = failed end
redis.call('SET', KEYS[1], string.format('%d:%d', count, last), 'PX', ARGV[3])
return count`;

const HOLD_LEASE_SCRIPT = `
local holder = redis.call('GET', KEYS[1])
if holder ~= false and holder ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1`;

type LinkOptions = { timeoutMs: number; log: Logger; now?: () => number; probeIntervalMs?: number; recoveredAfterMs?: number };

export class RedisUnavailable extends Error {
  constructor(readonly reason: string) {
    super(`redis unavailable: ${reason}`);
    this.name = 'RedisUnavailable';
  }
}

// Redis's error code (`OOM`), never the rest of its message.
const reasonOf = (error: unknown) => (error instanceof Error ? (/^([A-Z][A-Z_]+) /.exec(error.message)?.[1] ?? error.name) : 'error');

// Down after a failed command (commands refused, PING probes); the outage ends, one log line, after `recoveredAfterMs` without a failure.
export function createRedisLink(options: LinkOptions & { send: (args: string[]) => Promise<unknown> }) {
  const { timeoutMs, log, probeIntervalMs = 1000, recoveredAfterMs = 30_000, now = Date.now } = options;
  let up = true;
  let closed = false;
  let probing = false;
  let spell: { startedAt: number; lastFailureAt: number; failures: number; probe: NodeJS.Timeout } | undefined;

  function withTimeout(args: string[]): Promise<unknown> {
    let timer: NodeJS.Timeout | undefined;
    // A timer runs before that turn's socket reads: one step later, an answer that arrived counts.
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => setImmediate(() => reject(new RedisUnavailable(`no answer within ${timeoutMs} ms`))), timeoutMs);
    });
    const answer = options.send(args).catch((error: unknown) => Promise.reject(new RedisUnavailable(reasonOf(error))));
    return Promise.race([answer, late]).finally(() => clearTimeout(timer));
  }

  function markDown(reason: string): void {
    if (closed) return;
    up = false;
    if (!spell) {
      log.log('warn', 'redis_unavailable', { reason, fallback: 'in-memory limits, guards and cache until it is back' });
      spell = { startedAt: now(), lastFailureAt: 0, failures: 0, probe: setInterval(onTick, probeIntervalMs).unref() };
    }
    spell.lastFailureAt = now();
    spell.failures += 1;
  }

  async function onTick() {
    if (!up) {
      if (probing) return;
      probing = true;
      const answered = (await withTimeout(['PING']).catch(() => undefined)) !== undefined;
      probing = false;
      if (answered && !closed) up = true;
      return;
    }
    if (!spell || now() - spell.lastFailureAt < recoveredAfterMs) return;
    const { startedAt, failures, probe } = spell;
    spell = undefined;
    clearInterval(probe);
    log.log('info', 'redis_available', { outageSeconds: Math.round((now() - startedAt) / 1000), failedCommands: failures });
  }

  return {
    async send(args: readonly string[]): Promise<unknown> {
      if (closed) throw new RedisUnavailable('closed');
      if (!up) throw new RedisUnavailable('outage');
      return withTimeout([...args]).catch((error: RedisUnavailable) => {
        markDown(error.reason);
        throw error;
      });
    },
    healthy: () => spell === undefined && !closed,
    markDown,
    close() {
      closed = true;
      clearInterval(spell?.probe);
    },
  };
}

export type RedisServices = Awaited<ReturnType<typeof connectRedis>>;

/** What Node instances share (docs/deployment.md "Several instances"); on an outage each falls back to memory. */
export async function connectRedis(
  options: LinkOptions & {
    url: string;
    namespace: string;
    apiKey: string;
    subscribeLimitPerMinute: number;
    cacheMaxAgeSeconds: number;
    watchLeaseMs?: number;
  },
) {
  const { timeoutMs, log, now = Date.now, subscribeLimitPerMinute: limit, watchLeaseMs = WATCH_LEASE_MS } = options;
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
  const waited = new Promise<false>((resolve) => setTimeout(() => resolve(false), 2000).unref());
  const connected = await Promise.race([client.connect().then(() => true), waited]).catch(() => false);
  if (connected) log.log('info', 'redis_connected', { timeoutMs });
  else link.markDown('no connection at startup');

  // Keys per account; the HMAC secret derives from the API key, so a copy of Redis alone cannot test guessed addresses.
  const digest = createHash('sha256').update(`newsletter-bff shared state\0${options.apiKey}`).digest('hex').slice(0, 16);
  const secret = createHash('sha256').update(`newsletter-bff keyed hash\0${options.apiKey}`).digest();
  const prefix = `newsletter-bff:${FORMAT_VERSION}:${encodeURIComponent(options.namespace)}:${digest}:`;
  const hashed = (kind: string, value: string) =>
    `${prefix}${kind}:${createHmac('sha256', secret).update(value).digest('hex').slice(0, 32)}`;
  const send = <T = undefined>(args: string[], otherwise?: T) => link.send(args).catch(() => otherwise);

  const localRate = createMemoryRateLimiter({ limit, windowMs: RATE_WINDOW_MS, now });
  const rateLimiter: RateLimiter = {
    async hit(key) {
      const counter = hashed('rate', key);
      const reply = await send(['EVAL', COUNT_SCRIPT, '2', counter, counter, String(RATE_WINDOW_MS)]);
      if (!Array.isArray(reply) || typeof reply[0] !== 'number' || typeof reply[1] !== 'number') return localRate.hit(key);
      const [count, ttlMs] = reply as [number, number];
      return { allowed: count <= limit, retryAfterSeconds: Math.max(1, Math.ceil(ttlMs / 1000)) };
    },
  };

  // `localRepeats` is asked first and always written, so an outage forgets nothing.
  const localRepeats = createRepeatGuard(now);
  const repeatGuard: RepeatGuard = {
    isRepeat: async (email) => (await localRepeats.isRepeat(email)) || (await send(['EXISTS', hashed('seen', email)], 0)) === 1,
    async remember(email) {
      await localRepeats.remember(email);
      await send(['SET', hashed('seen', email), '1', 'PX', String(REPEAT_WINDOW_MS)]);
    },
  };

  const localSurge = createMemorySurgeCounter();
  const surgeKeysOf = (at: number) => [`${prefix}surge:${minuteOf(at)}`, `${prefix}surge:${minuteOf(at) - 1}`];
  const sharedRate = async (args: string[], at: number) => {
    const reply = await send(args);
    if (!Array.isArray(reply) || reply.length < 2) return undefined;
    const [current, previous] = [reply[0], reply.at(-1)].map((value) => Number(value ?? 0)) as [number, number];
    return Number.isFinite(current) && Number.isFinite(previous) ? slidingRate(current, previous, at) : undefined;
  };
  const surgeCounter: SurgeCounter = {
    add: async (at) => (await sharedRate(['EVAL', COUNT_SCRIPT, '2', ...surgeKeysOf(at), String(SURGE_KEEP_MS)], at)) ?? localSurge.add(at),
    rate: async (at) => (await sharedRate(['MGET', ...surgeKeysOf(at)], at)) ?? localSurge.rate(at),
  };

  const cacheKeyOf = (key: string) => `${prefix}cache:${key}`;
  const sharedCache: SharedTier = {
    async get(key) {
      const stored = await send(['GET', cacheKeyOf(key)]);
      if (typeof stored !== 'string') return undefined;
      const newline = stored.indexOf('\n');
      const fetchedAt = Number(stored.slice(0, newline));
      return newline < 1 || !Number.isFinite(fetchedAt) ? undefined : { fetchedAt, payload: stored.slice(newline + 1) };
    },
    async put(key, entry) {
      const value = `${entry.fetchedAt}\n${entry.payload}`;
      // Too large to share: an older shared copy must not outlive it.
      const tooLarge = Buffer.byteLength(value) > MAX_VALUE_BYTES;
      await send(tooLarge ? ['DEL', cacheKeyOf(key)] : ['SET', cacheKeyOf(key), value, 'EX', String(options.cacheMaxAgeSeconds)]);
    },
    delete: (key) => send(['DEL', cacheKeyOf(key)]).then(() => undefined),
    // Held until it expires; without Redis, every instance refreshes.
    claimRefresh: async (key, ms) => (await send(['SET', `${prefix}refresh:${key}`, '1', 'NX', 'PX', String(ms)], 'OK')) === 'OK',
  };

  // Shared, as the upstream limits the key; the instance's own is kept too, so an outage never shortens one.
  const localHoldOff = createMemoryHoldOff(now);
  const holdKeyOf = (operation: OperationClass) => `${prefix}hold-off:${operation}`;
  const streakKeyOf = (operation: OperationClass) => `${prefix}hold-off:${operation}:streak`;
  const larger = (mine: number, stored: number) => (Number.isFinite(stored) ? Math.max(mine, stored) : mine);
  const holdOff: HoldOff = {
    async state(operation) {
      const mine = await localHoldOff.state(operation);
      const stored = await send(['MGET', holdKeyOf(operation), streakKeyOf(operation)]);
      if (!Array.isArray(stored)) return mine;
      const [until, streak] = stored as (string | null)[];
      return {
        untilMs: larger(mine.untilMs, Number(until ?? 0)),
        streak: larger(mine.streak, Number(String(streak ?? '0').split(':')[0])),
      };
    },
    async hold(operation, untilMs) {
      await localHoldOff.hold(operation, untilMs);
      const ttlMs = String(Math.max(1, Math.ceil(untilMs - now())));
      await send(['EVAL', HOLD_UNTIL_SCRIPT, '1', holdKeyOf(operation), String(Math.ceil(untilMs)), ttlMs]);
    },
    async failed(operation, startedAtMs, failedAtMs) {
      const mine = await localHoldOff.failed(operation, startedAtMs, failedAtMs);
      const args = [String(Math.floor(startedAtMs)), String(Math.ceil(failedAtMs)), String(STREAK_FORGOTTEN_AFTER_MS)];
      return larger(mine, Number(await send(['EVAL', FAILED_SCRIPT, '1', streakKeyOf(operation), ...args], Number.NaN)));
    },
    async answered(operation) {
      await localHoldOff.answered(operation);
      await send(['DEL', streakKeyOf(operation)]);
    },
  };

  const watchStateKey = `${prefix}watch:state`;
  const holder = randomUUID();
  return {
    rateLimiter,
    repeatGuard,
    surgeCounter,
    sharedCache,
    holdOff,
    // One watcher among the instances (docs/deployment.md "Build hooks"); Redis unavailable, nobody holds it.
    watchLease: {
      hold: async () => Number(await send(['EVAL', HOLD_LEASE_SCRIPT, '1', `${prefix}watch:lease`, holder, String(watchLeaseMs)], 0)) === 1,
    },
    // No expiry. A failure rejects: the watch skips that tick rather than take it for a first look.
    watchStore: {
      load: () => link.send(['GET', watchStateKey]).then((stored) => (typeof stored === 'string' ? stored : undefined)),
      save: (state: string) => link.send(['SET', watchStateKey, state]).then(() => undefined),
    },
    healthy: link.healthy,
    /** Once it resolves, every earlier write has landed (one connection, in order). */
    ping: () => send(['PING'], false).then((answer) => answer !== false),
    async close() {
      link.close();
      client.destroy();
    },
  };
}
