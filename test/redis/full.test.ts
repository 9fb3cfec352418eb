import { createClient } from '@redis/client';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { redisServerAvailable, startInstance, startRedisServer, startUpstream } from './support.js';

/** Probes run every 50 ms in these suites (test/redis/support.ts): the old flapping would log a pair each. */
const RECOVERED_AFTER_MS = 1500;

describe.runIf(redisServerAvailable())('a full Redis (maxmemory tiny, noeviction)', () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it('is one outage while it refuses writes, one line when it starts and one when writes pass again', async () => {
    // 1 byte: above it from the start, so every write is refused with OOM; PING and reads still answer.
    const server = await startRedisServer(['--maxmemory', '1', '--maxmemory-policy', 'noeviction']);
    cleanups.push(server.stop);
    const admin = createClient({ url: server.url });
    await admin.connect();
    cleanups.push(() => admin.close());
    await expect(admin.set('probe', '1')).rejects.toThrow(/^OOM /);

    // Many addresses a second: surge detection off, so every subscribe is forwarded and writes to Redis.
    const instance = await startInstance(startUpstream(), server.url, {
      recoveredAfterMs: RECOVERED_AFTER_MS,
      env: { SUBSCRIBE_SURGE_PER_MINUTE: '0' },
    });
    cleanups.push(() => instance.redis.close());
    // Subscribes write (the rate limit, the repeat guard) for a while: ten times the probe interval and more.
    const until = Date.now() + 1200;
    for (let n = 0; Date.now() < until && n < 500; n += 1) {
      expect((await instance.subscribe(`reader-${n}@example.com`, `198.51.100.${n % 250}`)).status).toBeLessThan(500);
      await instance.get('/api/categories');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(instance.events('redis_unavailable')).toEqual([expect.objectContaining({ level: 'warn', reason: 'OOM' })]);
    expect(instance.events('redis_available')).toEqual([]);
    expect(instance.redis.healthy()).toBe(false);

    // Room again: the next writes pass, and after a quiet spell the outage ends with one line.
    await admin.configSet('maxmemory', '0');
    await vi.waitFor(
      async () => {
        await instance.subscribe(`again-${Date.now()}@example.com`, '192.0.2.1');
        expect(instance.redis.healthy()).toBe(true);
      },
      { timeout: 10_000, interval: 100 },
    );
    expect(instance.events('redis_unavailable')).toHaveLength(1);
    expect(instance.events('redis_available')).toEqual([expect.objectContaining({ level: 'info', failedCommands: expect.any(Number) })]);
  });
});
