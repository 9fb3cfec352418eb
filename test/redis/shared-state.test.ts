import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { FakeUpstream } from '../support/fake-upstream/fake.js';
import { createFakeClock } from '../helpers.js';
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

const SLUG = 'planning-next-years-plot';
const LIST_ISSUES = 'GET /newsletter/issues';

/**
 * The list calls once a refresh behind the responses has begun and the count has stopped moving
 * for 200 ms (real time is the point: the refresh runs after the answer). Bounded: 3 s at most.
 */
async function settledListCalls(count: () => number, before: number): Promise<number> {
  const pause = () => new Promise((resolve) => setTimeout(resolve, 20));
  for (let turn = 0; turn < 150 && count() === before; turn += 1) await pause();
  let last = count();
  for (let quiet = 0, turn = 0; quiet < 10 && turn < 150; turn += 1) {
    await pause();
    quiet = count() === last ? quiet + 1 : 0;
    last = count();
  }
  return last;
}

describe.runIf(redisServerAvailable())('several instances sharing one Redis', () => {
  let server: RedisServer;
  let fake: FakeUpstream;
  let instances: Instance[];

  beforeAll(async () => {
    server = await startRedisServer();
  });
  afterAll(async () => {
    await server?.stop();
  });

  /** Three instances over an empty Redis and a fresh fake upstream. */
  async function startThree(options: { compress?: boolean } = {}): Promise<[Instance, Instance, Instance]> {
    // A fresh server per test would cost a process each; an empty namespace does the same.
    await server.stop();
    await server.start();
    fake = startUpstream();
    instances = await Promise.all([0, 1, 2].map(() => startInstance(fake, server.url, { timeoutMs: PATIENT_TIMEOUT_MS, ...options })));
    return instances as [Instance, Instance, Instance];
  }
  afterEach(async () => {
    await Promise.all(instances.map((instance) => instance.redis.close()));
  });

  it('counts the subscribe limit across instances: the eleventh from one IP, wherever it lands, is a 429', async () => {
    const three = await startThree();
    const statuses: number[] = [];
    for (let attempt = 0; attempt < 11; attempt += 1) {
      const response = await three[attempt % 3]!.subscribe(`reader${attempt}@example.com`);
      statuses.push(response.status);
    }
    expect(statuses.slice(0, 10)).toEqual(Array(10).fill(200));
    expect(statuses[10]).toBe(429);
    // Another visitor is not limited by the first one's count.
    expect((await three[1].subscribe('other@example.com', '198.51.100.4')).status).toBe(200);
  });

  it('suppresses on B an address A forwarded, without a second upstream call', async () => {
    const [a, b] = await startThree();
    expect((await a.subscribe('jane@example.com')).status).toBe(200);
    expect((await b.subscribe('Jane@Example.com')).status).toBe(200);
    expect(fake.callsFor('POST /newsletter/subscribers')).toBe(1);
    expect(b.events('subscribe').map((line) => line.outcome)).toEqual(['deduped']);
  });

  it('keeps only a keyed hash of the address in Redis, never the address', async () => {
    const [a] = await startThree();
    await a.subscribe('jane@example.com', '192.0.2.55');
    const { createClient } = await import('@redis/client');
    const client = await createClient({ url: server.url }).connect();
    const keys = await client.keys('*');
    const values = await Promise.all(keys.filter((key) => !key.includes(':cache:')).map((key) => client.get(key)));
    await client.close();
    expect(keys.length).toBeGreaterThan(0);
    expect(JSON.stringify([keys, values])).not.toMatch(/jane|example\.com|192\.0\.2\.55|redis-suite-key/);
  });

  it('serves on B an issue A read, without an upstream call', async () => {
    const [a, b, c] = await startThree();
    expect((await a.get(`/api/issues/${SLUG}`)).status).toBe(200);
    await a.redis.ping(); // the shared copy is written behind the response
    const afterA = upstreamCalls(fake);
    const fromB = await b.get(`/api/issues/${SLUG}`);
    const fromC = await c.get(`/api/issues/${SLUG}`);
    expect([fromB.status, fromC.status]).toEqual([200, 200]);
    expect(await fromB.json()).toEqual(await (await a.get(`/api/issues/${SLUG}`)).json());
    expect(upstreamCalls(fake)).toBe(afterA);
  });

  it('serves on B the compressed copy of an issue A read, the same bytes under the same ETag', async () => {
    const [a, b] = await startThree({ compress: true });
    const brotli = { headers: { 'Accept-Encoding': 'br' } };
    const fromA = await a.get(`/api/issues/${SLUG}`, brotli);
    expect(fromA.headers.get('content-encoding')).toBe('br');
    await a.redis.ping(); // the shared copy is written behind the response
    const afterA = upstreamCalls(fake);
    const fromB = await b.get(`/api/issues/${SLUG}`, brotli);
    expect(fromB.status).toBe(200);
    expect(fromB.headers.get('content-encoding')).toBe('br');
    expect(fromB.headers.get('etag')).toBe(fromA.headers.get('etag'));
    expect(Buffer.from(await fromB.arrayBuffer())).toEqual(Buffer.from(await fromA.arrayBuffer()));
    expect(upstreamCalls(fake)).toBe(afterA);
  });

  it('reads the archive once for a cold start of three instances', async () => {
    const three = await startThree();
    for (const instance of three) {
      expect((await instance.get('/api/issues?limit=5')).status).toBe(200);
      expect((await instance.get('/api/categories')).status).toBe(200);
      await instance.redis.ping();
    }
    const withRedis = upstreamCalls(fake);

    // The same three reads without the shared tier: every instance reads the archive itself.
    const alone = startUpstream();
    const { createApp } = await import('../../src/core/app.js');
    const { createUpstreamClient } = await import('../../src/core/upstream/newsletter-api.js');
    const { testConfig } = await import('../helpers.js');
    for (let index = 0; index < 3; index += 1) {
      const config = testConfig({ NEWSLETTER_API_KEY: alone.apiKey, NEWSLETTER_API_BASE_URL: alone.baseUrl });
      const upstream = createUpstreamClient({ baseUrl: alone.baseUrl, apiKey: alone.apiKey, timeoutMs: 1000, fetch: alone.fetch });
      const { app } = createApp({ config, upstream });
      await app.request('http://bff.test/api/issues?limit=5');
      await app.request('http://bff.test/api/categories');
    }
    const withoutRedis = upstreamCalls(alone);
    process.stdout.write(`cold start of three instances: ${withRedis} upstream calls with Redis, ${withoutRedis} without\n`);
    expect(withoutRedis).toBe(3 * withRedis);
  });

  it('refreshes the archive once per TTL between two instances, not once each', async () => {
    await server.stop();
    await server.start();
    const clock = createFakeClock(Date.now());
    fake = startUpstream();
    instances = await Promise.all([0, 1].map(() => startInstance(fake, server.url, { timeoutMs: PATIENT_TIMEOUT_MS, now: clock.now })));
    const [a, b] = instances as [Instance, Instance];
    expect((await a.get('/api/issues?limit=5')).status).toBe(200);
    await a.redis.ping();
    expect((await b.get('/api/issues?limit=5')).status).toBe(200);
    const listCalls = () => fake.callsFor(LIST_ISSUES);
    const cold = listCalls();
    clock.advance(61_000);
    // Both find the shared copy past its TTL at once: one of them claims the refresh.
    const [fromA, fromB] = await Promise.all([a.get('/api/issues?limit=5'), b.get('/api/issues?limit=5')]);
    expect([fromA.status, fromB.status]).toEqual([200, 200]);
    const refreshes = await settledListCalls(listCalls, cold);
    expect(refreshes - cold).toBeGreaterThan(0);
    // A whole archive read of the sample publication is one page (and one empty page after it).
    expect(refreshes - cold).toBeLessThanOrEqual(cold);
  });

  it('holds off B after A’s reads failed, and counts B’s next failure into the same streak: the pause grows for every instance', async () => {
    const [a, b] = await startThree();
    const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    fake.setMode({ kind: 'status-storm', statuses: [500] });
    expect((await a.get('/api/issues?limit=5')).status).toBe(502);
    const afterA = upstreamCalls(fake);
    // A's read of the archive's first page with its two retries (the categories would read the archive too).
    expect(afterA).toBe(3);

    const fromB = await b.get('/api/issues?limit=5');
    expect(fromB.status).toBe(503);
    expect(fromB.headers.get('retry-after')).toBe('1');
    expect(upstreamCalls(fake)).toBe(afterA);

    // Past the first pause (at most 1 s; real time is the point): B asks once, no burst, for the streak is shared.
    await wait(1000);
    expect((await b.get('/api/issues?limit=5')).status).toBe(502);
    expect(upstreamCalls(fake)).toBe(afterA + 1);
    const fromA = await a.get('/api/issues?limit=5');
    expect(fromA.status).toBe(503);
    expect(upstreamCalls(fake)).toBe(afterA + 1);

    // The upstream is back: after the second pause (at most 2 s) one answer ends the streak for all.
    fake.setMode({ kind: 'ok' });
    await wait(2000);
    expect((await a.get('/api/issues?limit=5')).status).toBe(200);
    const c = instances[2]!;
    expect((await c.get('/api/issues?limit=1')).status).toBe(200);
    expect(c.events('upstream_failure')).toEqual([]);
  });

  it('holds off B after a 429 that A saw, until its Retry-After', async () => {
    const [a, b] = await startThree();
    fake.setMode({ kind: 'rate-limited', retryAfter: '30' });
    expect((await a.get(`/api/issues/${SLUG}`)).status).toBe(503);
    const afterA = upstreamCalls(fake);
    fake.setMode({ kind: 'ok' });
    const fromB = await b.get('/api/categories');
    expect(fromB.status).toBe(503);
    expect(Number(fromB.headers.get('retry-after'))).toBeGreaterThan(25);
    expect(upstreamCalls(fake)).toBe(afterA);
  });
});
