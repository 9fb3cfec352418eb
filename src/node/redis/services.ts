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
  surgeCounter: SurgeCounter;
  sharedCache: SharedTier;
  holdOff: HoldOff;
  watchLease: WatchLease;
  watchStore: WatchStore;
  healthy(): boolean;
  /** Commands on one connection run in order: once it resolves, every earlier write has landed. */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

export interface RedisServicesOptions {
  url: string;
  /** Per command; a slower answer counts as an outage. */
  timeoutMs: number;
  /** The upstream base URL (or `demo`) and its key namespace the keys. */
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
}

const MAX_RECONNECT_DELAY_MS = 2000;

/** Imported by the Node entry only with REDIS_URL, so neither Node without Redis nor the Worker carries the client. */
export async function connectRedis(options: RedisServicesOptions): Promise<RedisServices> {
  const { timeoutMs, log, now = Date.now } = options;
  const client = createClient({
    url: options.url,
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
    probeIntervalMs: options.probeIntervalMs,
    recoveredAfterMs: options.recoveredAfterMs,
  });
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
