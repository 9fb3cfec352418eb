import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { FakeUpstream } from '../support/fake-upstream/fake.js';
import {
  PATIENT_TIMEOUT_MS,
  redisServerAvailable,
  startInstance,
  startRedisServer,
  startUpstream,
  upstreamCalls,
  type Instance,
  type RedisServer,
} from './support.js';

// docs/subscribe.md "Surges": with REDIS_URL, every instance counts into one rate and sees one surge.

const THRESHOLD = 6;

describe.runIf(redisServerAvailable())('a subscribe surge seen by two instances sharing one Redis', () => {
  let server: RedisServer;
  let instances: Instance[] = [];

  beforeAll(async () => {
    server = await startRedisServer();
  });
  afterAll(async () => {
    await server?.stop();
  });
  afterEach(async () => {
    await Promise.all(instances.map((instance) => instance.redis.close()));
  });

  async function startTwo(fake: FakeUpstream): Promise<[Instance, Instance]> {
    const env = { SUBSCRIBE_SURGE_PER_MINUTE: String(THRESHOLD), SUBSCRIBE_RATE_LIMIT_PER_MINUTE: '1000' };
    instances = await Promise.all([0, 1].map(() => startInstance(fake, server.url, { timeoutMs: PATIENT_TIMEOUT_MS, env })));
    return instances as [Instance, Instance];
  }

  it('counts attempts on both into one rate: B pauses the first post it sees once A and B together pass the threshold', async () => {
    const fake = startUpstream();
    const [a, b] = await startTwo(fake);
    const statuses: number[] = [];
    // Alternating, so neither instance alone gets past half the threshold.
    for (let n = 0; n < THRESHOLD; n += 1)
      statuses.push((await (n % 2 ? b : a).subscribe(`person${n}@example.com`, `198.51.100.${n}`)).status);
    expect(statuses).toEqual(Array(THRESHOLD).fill(200));
    expect((await b.subscribe('late@example.com', '198.51.100.99')).status).toBe(503);
    expect((await a.subscribe('later@example.com', '198.51.100.98')).status).toBe(503);
    expect(upstreamCalls(fake)).toBe(THRESHOLD);
    expect(b.events('subscribe_surge_started')).toEqual([
      expect.objectContaining({ ratePerMinute: THRESHOLD + 1, thresholdPerMinute: THRESHOLD }),
    ]);
    expect(a.events('subscribe_surge_started')).toEqual([expect.objectContaining({ ratePerMinute: THRESHOLD + 2 })]);
  });

  it('counts in each instance’s memory while Redis is down, so a flood on one instance still starts a surge there', async () => {
    const fake = startUpstream();
    const [a, b] = await startTwo(fake);
    await server.stop();
    try {
      const statuses: number[] = [];
      for (let n = 0; n <= THRESHOLD; n += 1) statuses.push((await a.subscribe(`outage${n}@example.com`, `198.51.100.${n}`)).status);
      expect(statuses).toEqual([...Array(THRESHOLD).fill(200), 503]);
      // B counted none of them: without Redis each instance sees only its own attempts.
      expect((await b.subscribe('elsewhere@example.com', '198.51.100.200')).status).toBe(200);
      expect(a.events('subscribe_surge_started')).toHaveLength(1);
      expect(b.events('subscribe_surge_started')).toHaveLength(0);
    } finally {
      await server.start();
    }
  });
});
