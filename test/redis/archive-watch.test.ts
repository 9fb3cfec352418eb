import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createFakeUpstream } from '../support/fake-upstream/fake.js';
import { startHookReceiver, type HookReceiver } from '../support/hook-receiver.js';
import { createFakeClock } from '../helpers.js';
import {
  PATIENT_TIMEOUT_MS,
  REDIS_TEST_KEY,
  redisServerAvailable,
  startInstance,
  startRedisServer,
  type Instance,
  type RedisServer,
} from './support.js';

const TTL_MS = 60_000;
/** As the Node entry waits with REDIS_URL: a TTL and two ticks, so every instance serves the change first. */
const SETTLE_MS = TTL_MS + 2_000;

/** Real time, where the lease's own expiry (in Redis) is the point. */
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.runIf(redisServerAvailable())('the archive watch of several instances sharing one Redis (DEPLOY_HOOK_URL)', () => {
  let server: RedisServer;
  let instances: Instance[] = [];
  const receivers: HookReceiver[] = [];

  beforeAll(async () => {
    server = await startRedisServer();
  });
  afterAll(async () => {
    await server?.stop();
  });
  afterEach(async () => {
    await Promise.all(instances.splice(0).map((instance) => instance.redis.close().catch(() => undefined)));
    await Promise.all(receivers.splice(0).map((receiver) => receiver.stop()));
  });

  /** Two instances over an empty Redis, one fake upstream and one hook receiver, on one fake clock. */
  async function startTwo(watchLeaseMs: number) {
    await server.stop();
    await server.start();
    // After the sample publication's last letter: an issue published now is the newest.
    const clock = createFakeClock(Date.UTC(2027, 0, 4));
    const fake = createFakeUpstream({ apiKey: REDIS_TEST_KEY, baseUrl: 'http://127.0.0.1:9/v1', now: clock.now });
    const receiver = await startHookReceiver();
    receivers.push(receiver);
    const options = { timeoutMs: PATIENT_TIMEOUT_MS, now: clock.now, env: { DEPLOY_HOOK_URL: receiver.url }, watchLeaseMs };
    instances = await Promise.all([0, 1].map(() => startInstance(fake, server.url, options)));
    const [a, b] = instances as [Instance, Instance];
    const listed = async (instance: Instance) =>
      ((await (await instance.get('/api/issues?limit=5')).json()) as { data: { slug: string }[] }).data.map((issue) => issue.slug);
    return { a, b, fake, receiver, clock, listed, tickBoth: async () => (await a.archiveWatch!.tick(), await b.archiveWatch!.tick()) };
  }

  it('has one instance watch, and makes one call per change between them, once every instance serves it', async () => {
    const { a, b, fake, receiver, clock, listed, tickBoth } = await startTwo(5_000);
    await tickBoth();
    expect(a.events('archive_watch_started')).toHaveLength(1);
    expect(b.events('archive_watch_started')).toHaveLength(0);
    fake.publish('new-one');
    clock.advance(TTL_MS + 1);
    await tickBoth();
    // Found, and both instances serve it, but the call waits until no older copy can be served.
    expect(await listed(a)).toContain('new-one');
    expect(await listed(b)).toContain('new-one');
    expect(receiver.calls).toEqual([]);
    clock.advance(SETTLE_MS);
    await tickBoth();
    expect(receiver.calls.map((call) => call.body?.changes)).toEqual([[{ slug: 'new-one', kind: 'new' }]]);
    for (let ttl = 0; ttl < 3; ttl += 1) {
      clock.advance(TTL_MS + 1);
      await tickBoth();
    }
    expect(receiver.calls).toHaveLength(1);
    expect([...a.events('deploy_hook_called'), ...b.events('deploy_hook_called')]).toHaveLength(1);
  });

  it('hands the watch over when the watcher stops, and the next one announces what changed meanwhile, once', async () => {
    const { a, b, fake, receiver, clock, tickBoth } = await startTwo(300);
    await tickBoth();
    // The watcher stops (its Redis connection gone): nobody renews its lease.
    await a.redis.close();
    fake.publish('while-handing-over');
    clock.advance(TTL_MS + 1);
    await pause(600);
    await b.archiveWatch!.tick();
    clock.advance(SETTLE_MS);
    await b.archiveWatch!.tick();
    expect(receiver.calls.map((call) => call.body?.changes)).toEqual([[{ slug: 'while-handing-over', kind: 'new' }]]);
    // It went on from what the first watcher saw: not a first look of its own.
    expect(b.events('archive_watch_started')).toEqual([]);
  });
});
