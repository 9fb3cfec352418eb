import { afterEach, describe, expect, it, vi } from 'vitest';
import type { FakeUpstream } from '../support/fake-upstream/fake.js';
import {
  REDIS_TIMEOUT_MS,
  redisServerAvailable,
  startDelayProxy,
  startInstance,
  startRedisServer,
  startUpstream,
  upstreamCalls,
  type Instance,
} from './support.js';

const SLUG = 'planning-next-years-plot';
/**
 * A request waits for a few Redis timeouts at most, never for the client to reconnect (its connect timeout is 1 s); the room
 * above three timeouts is scheduling on a loaded two-core machine (the slowest request seen in a full `npm test`: 592 ms).
 */
const REQUEST_BUDGET_MS = 3 * REDIS_TIMEOUT_MS + 600;
/** How long a test waits for a reconnect to be noticed (probes run every 50 ms here). */
const RECOVERY_WITHIN_MS = 8000;

/** Runs `request`, and the milliseconds it took. */
async function timed(request: () => Response | Promise<Response>): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  const response = await request();
  await response.arrayBuffer();
  return { status: response.status, ms: performance.now() - started };
}

/** A round of every kind of request, each from a fresh address and IP. */
async function round(instance: Instance, tag: string) {
  return [
    await timed(() => instance.get(`/api/issues/${SLUG}`)),
    await timed(() => instance.get('/api/issues?limit=3')),
    await timed(() => instance.get('/api/categories')),
    await timed(() => instance.subscribe(`reader-${tag}@example.com`, `198.51.100.${tag.length}`)),
  ];
}

describe.runIf(redisServerAvailable())('Redis failing under several instances', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function setUp(options: { proxied?: boolean; timeoutMs?: number } = {}) {
    const server = await startRedisServer();
    cleanups.push(server.stop);
    const proxy = options.proxied ? await startDelayProxy(server.port) : undefined;
    if (proxy) cleanups.push(proxy.stop);
    const fake: FakeUpstream = startUpstream();
    const url = proxy?.url ?? server.url;
    const a = await startInstance(fake, url, { timeoutMs: options.timeoutMs });
    const b = await startInstance(fake, url, { timeoutMs: options.timeoutMs });
    cleanups.push(
      () => a.redis.close(),
      () => b.redis.close(),
    );
    return { server, proxy, fake, a, b };
  }

  it('keeps answering, fast and right, when Redis is stopped mid-run, with one warn per instance', async () => {
    const { server, fake, a, b } = await setUp();
    expect((await a.get(`/api/issues/${SLUG}`)).status).toBe(200);
    await server.stop();

    const results = [...(await round(a, 'a1')), ...(await round(b, 'b1')), ...(await round(a, 'a2')), ...(await round(b, 'b2'))];
    expect(results.map((result) => result.status)).toEqual(Array(16).fill(200));
    expect(Math.max(...results.map((result) => result.ms))).toBeLessThan(REQUEST_BUDGET_MS);
    // B never saw the issue: it reads it from the upstream, which holds it.
    expect(fake.slugCalls(SLUG)).toBe(2);
    for (const instance of [a, b]) {
      expect(instance.events('redis_unavailable')).toHaveLength(1);
      expect(instance.redis.healthy()).toBe(false);
    }
    // The subscribe limit still holds, per instance, from memory.
    const statuses: number[] = [];
    for (let attempt = 0; attempt < 11; attempt += 1) statuses.push((await a.subscribe(`limit${attempt}@example.com`, '192.0.2.9')).status);
    expect(statuses.filter((status) => status === 429)).toHaveLength(1);
    process.stdout.write(`redis stopped: 16 requests, slowest ${Math.max(...results.map((r) => r.ms)).toFixed(1)} ms\n`);
  });

  it('treats a Redis that answers slowly as down: one timeout, then answers from memory at once, until it is quick again', async () => {
    // A long timeout here: what is checked is that no request after the first waits for one, and
    // on a loaded machine a request that waits for nothing can still take a few hundred ms.
    const timeoutMs = 1000;
    const { proxy, a, b } = await setUp({ proxied: true, timeoutMs });
    expect((await a.get(`/api/issues/${SLUG}`)).status).toBe(200);
    proxy!.setDelay(2 * timeoutMs);

    const first = await round(a, 'slow1');
    const later = [...(await round(a, 'slow2')), ...(await round(b, 'slow3'))];
    expect([...first, ...later].map((result) => result.status)).toEqual(Array(12).fill(200));
    expect(Math.max(...first.map((result) => result.ms))).toBeLessThan(3 * timeoutMs + 150);
    // Once an instance knows of the outage, none of its requests waits on Redis (B learns with its first).
    const afterFirst = later.filter((_result, index) => index !== 4);
    expect(Math.max(...afterFirst.map((result) => result.ms))).toBeLessThan(timeoutMs);
    expect(a.events('redis_unavailable')).toHaveLength(1);
    expect(b.events('redis_unavailable')).toHaveLength(1);

    proxy!.setDelay(0);
    await vi.waitFor(() => expect(a.redis.healthy() && b.redis.healthy()).toBe(true), { timeout: RECOVERY_WITHIN_MS, interval: 50 });
    expect(a.events('redis_available')).toHaveLength(1);
    expect(b.events('redis_available')).toHaveLength(1);
    process.stdout.write(
      `redis slow: first request per instance ${Math.max(...first.map((r) => r.ms)).toFixed(1)} ms, later ones at most ${Math.max(...afterFirst.map((r) => r.ms)).toFixed(1)} ms\n`,
    );
  });

  it('reconnects by itself when Redis restarts, logs it back once, and shares state again', async () => {
    const { server, fake, a, b } = await setUp();
    await server.stop();
    expect((await a.subscribe('before@example.com')).status).toBe(200);
    expect((await b.get('/api/categories')).status).toBe(200);
    await server.start();

    await vi.waitFor(() => expect(a.redis.healthy() && b.redis.healthy()).toBe(true), { timeout: RECOVERY_WITHIN_MS, interval: 50 });
    for (const instance of [a, b]) {
      expect(instance.events('redis_unavailable')).toHaveLength(1);
      expect(instance.events('redis_available')).toHaveLength(1);
    }
    // The restarted Redis is empty; what A forwards now is a repeat on B again.
    expect((await a.subscribe('after@example.com')).status).toBe(200);
    const posts = fake.callsFor('POST /newsletter/subscribers');
    expect((await b.subscribe('after@example.com')).status).toBe(200);
    expect(fake.callsFor('POST /newsletter/subscribers')).toBe(posts);
    expect(upstreamCalls(fake)).toBeGreaterThan(0);
  });
});
