import { createExecutionContext, waitOnExecutionContext } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { createWorker } from '../../src/workers/handler.js';
import { createFakeClock, createScriptedFetch, jsonResponse, TEST_API_KEY } from '../helpers.js';

const ISSUES = [{ id: 'i1', slug: 'first-issue', subject: 'First', status: 'sent', isPublic: true, sentAt: '2026-01-02T00:00:00.000Z' }];

let hostCounter = 0;

/**
 * One isolate at CACHE_TTL_SECONDS=2 whose upstream holds every answer until released, so
 * requests keep arriving while a refresh is still out, as under real traffic.
 */
function setup(sharedCache: Cache | null) {
  hostCounter += 1;
  const clock = createFakeClock();
  let held = false;
  const waiting: (() => void)[] = [];
  const upstream = createScriptedFetch(async (call) => {
    if (held) await new Promise<void>((resolve) => waiting.push(resolve));
    if (call.url.pathname.endsWith('/newsletter/issues')) return jsonResponse({ ok: true, data: ISSUES });
    return jsonResponse({ ok: true, data: [] });
  });
  const env = {
    NEWSLETTER_API_KEY: TEST_API_KEY,
    NEWSLETTER_API_BASE_URL: `https://single-flight-${hostCounter}.test/v1`,
    NODE_ENV: 'production',
    CACHE_TTL_SECONDS: '2',
  };
  const worker = createWorker({ fetch: upstream.fetch, now: clock.now, write: () => undefined, sharedCache });
  const contexts: ReturnType<typeof createExecutionContext>[] = [];
  /** Sends one request and waits for its answer, not for the work it left behind. */
  async function request(path: string) {
    const ctx = createExecutionContext();
    contexts.push(ctx);
    const response = await worker.fetch(new Request(`https://bff.example${path}`), env, ctx);
    await response.arrayBuffer();
    return response;
  }
  return {
    clock,
    request,
    /** Archive loads: List Issues calls for the first page. */
    archiveLoads: () =>
      upstream.calls.filter((call) => call.url.pathname.endsWith('/newsletter/issues') && call.url.searchParams.get('offset') === '0')
        .length,
    hold: () => (held = true),
    async releaseAll() {
      held = false;
      for (const resolve of waiting.splice(0)) resolve();
      for (const ctx of contexts.splice(0)) await waitOnExecutionContext(ctx);
    },
  };
}

describe('refreshing a stale archive on workerd', () => {
  for (const [tier, sharedCache] of [
    ['with the Cache API tier', () => caches.default],
    ['without it (as on Node)', () => null],
  ] as const) {
    it(`starts one upstream refresh however many requests, junk parameters and all, arrive while it is out (${tier})`, async () => {
      const { clock, request, archiveLoads, hold, releaseAll } = setup(sharedCache());
      expect((await request('/api/issues?limit=5')).status).toBe(200);
      await releaseAll();
      expect(archiveLoads()).toBe(1);

      clock.advance(2_100);
      hold();
      for (let i = 0; i < 40; i += 1) {
        const response = await request(`/api/issues?limit=5&utm_source=x${i}&junk=${i}`);
        expect(response.status).toBe(200);
        expect(response.headers.get('x-cache')).toBe('STALE');
        clock.advance(10);
      }
      expect(archiveLoads()).toBe(2);
      await releaseAll();

      // The refresh landed: the isolate picks the new copy up (from the tier, where it may still
      // serve its stale one once while it does), then answers fresh, asking nothing more upstream.
      await request('/api/issues?limit=5&junk=after');
      await releaseAll();
      const fresh = await request('/api/issues?limit=5&junk=later');
      expect(fresh.headers.get('x-cache')).toBe('HIT');
      expect(archiveLoads()).toBe(2);
      await releaseAll();
    });
  }
});
