import { serve, type ServerType } from '@hono/node-server';
import { getConnInfo } from '@hono/node-server/conninfo';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createNodeClientIp } from '../../src/core/http/ip-address.js';
import { startFakeUpstreamServer, type FakeUpstreamServer } from '../support/fake-upstream/server.js';
import { createAppForConfig } from '../../src/core/app.js';
import { createLogCapture, TEST_API_KEY, testConfig } from '../helpers.js';

/*
 * A slug scan as an attacker would run it: the service on a loopback port, the one fake upstream
 * on another with a rate limit of 300 calls a minute, unknown slugs fired many at a time, and a
 * visitor subscribing all along. Real sockets and the real clock; no sleeps (every loop is bounded
 * by its count of requests).
 */

const SCAN_SLUGS = 1_000;
const CONCURRENCY = 32;
/** A subscribe is sent after every this many scanned slugs. */
const SUBSCRIBE_EVERY = 100;
const INDEX_REFRESH_MIN_MS = 5_000;

const running: { stop(): Promise<void> }[] = [];
afterEach(async () => {
  for (const thing of running.splice(0)) await thing.stop();
});

async function startService(env: Record<string, string> = {}) {
  const upstream: FakeUpstreamServer = await startFakeUpstreamServer({ apiKey: TEST_API_KEY, rateLimit: { calls: 300, windowMs: 60_000 } });
  running.push(upstream);
  const logs = createLogCapture();
  const config = testConfig({
    NEWSLETTER_API_BASE_URL: upstream.baseUrl,
    SUBSCRIBE_RATE_LIMIT_PER_MINUTE: '10000',
    ...env,
  });
  const { app } = createAppForConfig(config, {
    log: logs.log,
    clientIp: createNodeClientIp(0, (c) => getConnInfo(c).remote.address),
  });
  const server: ServerType = await new Promise((resolve) => {
    const started = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve(started));
  });
  running.push({ stop: () => new Promise<void>((resolve) => server.close(() => resolve())) });
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { upstream, origin, logs };
}

/** Scans `count` unknown slugs, `CONCURRENCY` at a time, subscribing every SUBSCRIBE_EVERY slugs. */
async function scan(origin: string, count: number) {
  const statuses = new Map<number, number>();
  const subscribeStatuses: number[] = [];
  let next = 0;
  async function worker(): Promise<void> {
    // Bounded: each turn takes one of `count` slugs.
    while (next < count) {
      const index = next;
      next += 1;
      const response = await fetch(`${origin}/api/issues/scan-${index}-${Math.random().toString(36).slice(2, 8)}`);
      await response.arrayBuffer();
      statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
      if (index % SUBSCRIBE_EVERY === 0) {
        const subscribed = await fetch(`${origin}/api/subscribe`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
          body: JSON.stringify({ email: `reader-${index}@example.com`, optInAttestation: true }),
        });
        await subscribed.arrayBuffer();
        subscribeStatuses.push(subscribed.status);
      }
    }
  }
  const started = performance.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return { statuses: Object.fromEntries(statuses), subscribeStatuses, ms: performance.now() - started };
}

const bySlugCalls = (upstream: FakeUpstreamServer, since: number) =>
  upstream.requestsSince(since).filter((call) => call.path.includes('/by-slug/')).length;

describe('a scan of unknown slugs against a rate-limited upstream, over real sockets', () => {
  it('costs the upstream no by-slug call while the archive index is kept, and subscribing stays 200', async () => {
    const { upstream, origin } = await startService();
    expect((await fetch(`${origin}/api/issues`)).status).toBe(200);
    const before = upstream.requests.length;

    const result = await scan(origin, SCAN_SLUGS);

    expect(result.statuses).toEqual({ 404: SCAN_SLUGS });
    expect(bySlugCalls(upstream, before)).toBe(0);
    // Only index refreshes, at most one per interval (the sample archive is one page).
    expect(upstream.requestsSince(before).length - result.subscribeStatuses.length).toBeLessThanOrEqual(
      1 + Math.ceil(result.ms / INDEX_REFRESH_MIN_MS),
    );
    expect(new Set(result.subscribeStatuses)).toEqual(new Set([200]));
    expect(result.subscribeStatuses).toHaveLength(SCAN_SLUGS / SUBSCRIBE_EVERY);
  });

  it('spends no more than the read budget when no index is kept, and subscribing stays 200', async () => {
    const { upstream, origin, logs } = await startService({ READ_BUDGET_PER_CLIENT_PER_MINUTE: '20', READ_BUDGET_PER_MINUTE: '120' });
    const before = upstream.requests.length;

    const result = await scan(origin, 400);

    // A quarter of a minute's budget at once (5), and what refills while the scan runs (20 a minute).
    const allowed = 5 + Math.ceil((result.ms / 60_000) * 20);
    expect(bySlugCalls(upstream, before)).toBeLessThanOrEqual(allowed);
    expect((result.statuses[503] ?? 0) + (result.statuses[404] ?? 0)).toBe(400);
    expect(new Set(result.subscribeStatuses)).toEqual(new Set([200]));
    expect(logs.entries().filter((entry) => entry.event === 'read_budget_exhausted').length).toBeLessThanOrEqual(
      1 + Math.ceil(result.ms / 3_000),
    );
  });
});
