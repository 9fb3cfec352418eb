import { createClient } from '@redis/client';
import type { Logger } from '../../core/log.js';
import { createMemoryRateLimiter, type RateLimiter } from '../../core/http/rate-limit.js';
import type { SharedTier } from '../../core/reads/shared-tier.js';
import { createRepeatGuard, REPEAT_WINDOW_MS, type RepeatGuard } from '../../core/subscribe/guards.js';
import { createMemoryHoldOff, type HoldOff } from '../../core/upstream/hold-off.js';
import { createRedisSharedTier } from './cache-tier.js';
import { createRedisWatchLease, createRedisWatchStore } from './archive-watch.js';
import type { WatchLease, WatchStore } from '../../core/watch/archive-watch.js';
import { createRedisHoldOff } from './hold-off.js';
import { createRedisKeys } from './keys.js';
import { createRedisLink, type RedisLink } from './link.js';
import { createRedisRateLimiter } from './fixed-window.js';
import { createRedisRepeatGuard } from './repeat-guard.js';
import { createRedisSurgeCounter } from './surge-counter.js';
import { createMemorySurgeCounter, type SurgeCounter } from '../../core/subscribe/surge.js';

/** What several Node instances share through Redis; each falls back to memory on its own. */
export interface RedisServices {
  rateLimiter: RateLimiter;
  repeatGuard: RepeatGuard;
  /** Subscribe attempts of every instance, for surge detection. */
  surgeCounter: SurgeCounter;
  sharedCache: SharedTier;
  holdOff: HoldOff;
  /** DEPLOY_HOOK_URL's watch: one watcher among the instances, and the state it goes on from. */
  watchLease: WatchLease;
  watchStore: WatchStore;
  /** False during an outage (readiness and metrics read it; requests never wait on it). */
  healthy(): boolean;
  /**
   * One PING through the link: true when Redis answered in time. Commands on one connection run
   * in order, so when it resolves every write this instance sent before has landed.
   */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

export interface RedisServicesOptions {
  url: string;
  /** Per command; a slower answer counts as an outage. */
  timeoutMs: number;
  /** The upstream base URL (or `demo`) and its key: what keys are namespaced by. */
  namespace: string;
  apiKey: string;
  subscribeLimitPerMinute: number;
  /** TTL + stale-if-error: how long a shared cache entry is kept. */
  cacheMaxAgeSeconds: number;
  log: Logger;
  now?: () => number;
  /** How long startup waits for the first connection before serving from memory (default 2 s). */
  connectWaitMs?: number;
  probeIntervalMs?: number;
  /** How long Redis must answer without a failure before an outage counts as over (the link's default: 30 s). */
  recoveredAfterMs?: number;
  /** How long the archive watcher's lease lasts without a renewal (WATCH_LEASE_MS by default). */
  watchLeaseMs?: number;
}

/** Reconnecting backs off to this; the link's probe notices the return within a second more. */
const MAX_RECONNECT_DELAY_MS = 2000;

/**
 * Connects to Redis (node-redis's core client, `@redis/client`) and builds the shared state on
 * it. Loaded by the Node entry only when REDIS_URL is set, with a dynamic `import()`, so neither
 * a Node process without Redis nor the Worker bundle carries the client.
 */
export async function connectRedis(options: RedisServicesOptions): Promise<RedisServices> {
  const { timeoutMs, log, now = Date.now } = options;
  const client = createClient({
    url: options.url,
    // A command while disconnected fails at once instead of queueing behind the reconnect.
    disableOfflineQueue: true,
    socket: {
      connectTimeout: Math.max(1000, timeoutMs * 10),
      reconnectStrategy: (retries: number) => Math.min(50 * 2 ** Math.min(retries, 10), MAX_RECONNECT_DELAY_MS),
    },
  });
  const link: RedisLink = createRedisLink({
    send: (args) => client.sendCommand(args),
    timeoutMs,
    log,
    now,
    ...(options.probeIntervalMs === undefined ? {} : { probeIntervalMs: options.probeIntervalMs }),
    ...(options.recoveredAfterMs === undefined ? {} : { recoveredAfterMs: options.recoveredAfterMs }),
  });
  // The client reports every failed reconnect; the link turns them into one line per outage.
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

  const keys = createRedisKeys(options.namespace, options.apiKey);
  const windowMs = 60_000;
  const limit = options.subscribeLimitPerMinute;
  return {
    rateLimiter: createRedisRateLimiter(link, keys, {
      limit,
      windowMs,
      fallback: createMemoryRateLimiter({ limit, windowMs, now }),
    }),
    repeatGuard: createRedisRepeatGuard(link, keys, { windowMs: REPEAT_WINDOW_MS, local: createRepeatGuard(now) }),
    surgeCounter: createRedisSurgeCounter(link, keys, createMemorySurgeCounter()),
    sharedCache: createRedisSharedTier(link, keys, { maxAgeSeconds: options.cacheMaxAgeSeconds }),
    holdOff: createRedisHoldOff(link, keys, { local: createMemoryHoldOff(now), now }),
    watchLease: createRedisWatchLease(link, keys, { leaseMs: options.watchLeaseMs }),
    watchStore: createRedisWatchStore(link, keys),
    healthy: link.healthy,
    ping: () => link.send(['PING']).then(
      () => true,
      () => false,
    ),
    async close() {
      link.close();
      client.destroy();
    },
  };
}
