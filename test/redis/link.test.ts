import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../src/core/log.js';
import { createRedisLink, RedisUnavailable } from '../../src/node/redis/services.js';

/**
 * A Redis stand-in whose answers the test decides: `up`, `down` (refuses), `silent` (never
 * answers) or `full` (answers PING and reads, refuses writes as Redis with `noeviction` does).
 */
function scriptedRedis() {
  let state: 'up' | 'down' | 'silent' | 'full' = 'up';
  const sent: string[][] = [];
  return {
    sent,
    set: (next: typeof state) => void (state = next),
    send: (args: string[]): Promise<unknown> => {
      sent.push(args);
      if (state === 'down') return Promise.reject(new Error('ECONNREFUSED'));
      if (state === 'silent') return new Promise(() => undefined);
      if (state === 'full' && args[0] !== 'PING' && args[0] !== 'GET') {
        return Promise.reject(Object.assign(new Error("OOM command not allowed when used memory > 'maxmemory'."), { name: 'SimpleError' }));
      }
      return Promise.resolve(args[0] === 'PING' ? 'PONG' : 'OK');
    },
  };
}

function linkOver(redis: ReturnType<typeof scriptedRedis>) {
  const lines: { level: string; event: string; [field: string]: unknown }[] = [];
  const log = createLogger({ write: (line) => lines.push(JSON.parse(line) as { level: string; event: string }) });
  // Date is faked with the timers (vi.useFakeTimers), so this clock advances with them.
  const link = createRedisLink({
    send: redis.send,
    timeoutMs: 100,
    log,
    probeIntervalMs: 1000,
    recoveredAfterMs: 5000,
    now: () => Date.now(),
  });
  return { link, lines };
}

describe('the Redis link', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('passes commands through while Redis answers, and logs nothing', async () => {
    const redis = scriptedRedis();
    const { link, lines } = linkOver(redis);
    await expect(link.send(['SET', 'k', 'v'])).resolves.toBe('OK');
    expect(link.healthy()).toBe(true);
    expect(lines).toEqual([]);
  });

  it('logs one warn per outage, and then refuses at once without sending anything', async () => {
    const redis = scriptedRedis();
    const { link, lines } = linkOver(redis);
    redis.set('down');
    await expect(link.send(['GET', 'a'])).rejects.toBeInstanceOf(RedisUnavailable);
    const sentBefore = redis.sent.length;
    for (let attempt = 0; attempt < 50; attempt += 1) await expect(link.send(['GET', 'a'])).rejects.toBeInstanceOf(RedisUnavailable);
    expect(redis.sent.length).toBe(sentBefore);
    expect(link.healthy()).toBe(false);
    expect(lines.map((line) => `${line.level} ${line.event}`)).toEqual(['warn redis_unavailable']);
  });

  it('gives up on a command after the timeout: a silent Redis is an outage too', async () => {
    const redis = scriptedRedis();
    const { link, lines } = linkOver(redis);
    redis.set('silent');
    const answer = link.send(['GET', 'a']);
    const settled = expect(answer).rejects.toThrow('no answer within 100 ms');
    await vi.advanceTimersByTimeAsync(99);
    expect(link.healthy()).toBe(true);
    await vi.advanceTimersByTimeAsync(1);
    await vi.runOnlyPendingTimersAsync();
    await settled;
    expect(lines.map((line) => line.event)).toEqual(['redis_unavailable']);
  });

  it('probes an outage with PING in the background and logs one info once Redis has answered for recoveredAfterMs', async () => {
    const redis = scriptedRedis();
    const { link, lines } = linkOver(redis);
    redis.set('down');
    await link.send(['GET', 'a']).catch(() => undefined);
    await vi.advanceTimersByTimeAsync(3000);
    expect(redis.sent.filter((args) => args[0] === 'PING')).toHaveLength(3);
    redis.set('up');
    await vi.advanceTimersByTimeAsync(1000);
    // Commands go to Redis again at once; the outage is over when it has answered for 5 s.
    await expect(link.send(['GET', 'a'])).resolves.toBe('OK');
    expect(link.healthy()).toBe(false);
    await vi.advanceTimersByTimeAsync(5000);
    expect(link.healthy()).toBe(true);
    // Probing stops once Redis is back.
    const pings = redis.sent.filter((args) => args[0] === 'PING').length;
    await vi.advanceTimersByTimeAsync(5000);
    expect(redis.sent.filter((args) => args[0] === 'PING')).toHaveLength(pings);
    expect(lines.map((line) => `${line.level} ${line.event}`)).toEqual(['warn redis_unavailable', 'info redis_available']);
  });

  it('counts a Redis that answers PING but refuses writes (full, noeviction) as one outage, not one a second', async () => {
    const redis = scriptedRedis();
    const { link, lines } = linkOver(redis);
    redis.set('full');
    // A write and a read every 100 ms for a minute: each probe finds Redis answering, each next write fails.
    for (let tick = 0; tick < 600; tick += 1) {
      await link.send(['SET', 'k', 'v']).catch(() => undefined);
      await link.send(['GET', 'k']).catch(() => undefined);
      await vi.advanceTimersByTimeAsync(100);
    }
    expect(redis.sent.filter((args) => args[0] === 'SET').length).toBeGreaterThan(30);
    expect(link.healthy()).toBe(false);
    expect(lines).toEqual([expect.objectContaining({ level: 'warn', event: 'redis_unavailable', reason: 'OOM' })]);
    redis.set('up');
    for (let tick = 0; tick < 100; tick += 1) {
      await link.send(['SET', 'k', 'v']).catch(() => undefined);
      await vi.advanceTimersByTimeAsync(100);
    }
    expect(link.healthy()).toBe(true);
    expect(lines.map((line) => `${line.level} ${line.event}`)).toEqual(['warn redis_unavailable', 'info redis_available']);
    expect(lines[1]).toMatchObject({ outageSeconds: expect.any(Number), failedCommands: expect.any(Number) });
    expect(lines[1]!.outageSeconds).toBeGreaterThanOrEqual(60);
  });

  it('sends one probe at a time, however slow Redis is', async () => {
    const redis = scriptedRedis();
    const { link } = linkOver(redis);
    redis.set('down');
    await link.send(['GET', 'a']).catch(() => undefined);
    redis.set('silent');
    await vi.advanceTimersByTimeAsync(1000);
    expect(redis.sent.filter((args) => args[0] === 'PING')).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1000);
    expect(redis.sent.filter((args) => args[0] === 'PING')).toHaveLength(2);
  });
});
