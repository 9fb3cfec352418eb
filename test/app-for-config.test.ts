import { describe, expect, it } from 'vitest';
import { createFakeUpstream } from './support/fake-upstream/fake.js';
import { createAppForConfig } from '../src/core/app.js';
import { createFakeClock, createLogCapture, jsonResponse, TEST_API_KEY, TEST_BASE_URL, testConfig } from './helpers.js';

describe('the service after a read meets an upstream 429', () => {
  it('answers reads 503 with Retry-After, keeps subscribing at 200, and logs the hold-off once with the refused call', async () => {
    const clock = createFakeClock();
    const logs = createLogCapture(clock.now);
    const fake = createFakeUpstream({ apiKey: TEST_API_KEY, baseUrl: TEST_BASE_URL, now: clock.now });
    let reads = 0;
    // Reads are answered 429 for a minute; Create Subscriber by the fake upstream.
    const fetch: typeof globalThis.fetch = async (input, init) => {
      if ((init?.method ?? 'GET') !== 'GET') return fake.fetch(input, init);
      reads += 1;
      return jsonResponse({ ok: false, error: { code: 'RATE_LIMITED', message: 'slow down' } }, 429, { 'Retry-After': '60' });
    };
    const { app } = createAppForConfig(testConfig({ SUBSCRIBE_RATE_LIMIT_PER_MINUTE: '100' }), {
      log: logs.log,
      clientIp: () => '198.51.100.7',
      fetch,
      now: clock.now,
    });
    const subscribe = (n: number) =>
      app.request('/api/subscribe', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
        body: JSON.stringify({ email: `reader-${n}@example.com`, optInAttestation: true }),
      });

    for (let n = 0; n < 5; n += 1) {
      const read = await app.request(`/api/issues/scan-${n}`);
      expect(read.status).toBe(503);
      expect(Number(read.headers.get('retry-after'))).toBeGreaterThan(0);
      expect((await subscribe(n)).status).toBe(200);
    }

    expect(reads).toBe(1);
    const holdOffs = logs.entries().filter((entry) => entry.event === 'upstream_hold_off');
    expect(holdOffs).toEqual([
      expect.objectContaining({
        level: 'warn',
        operation: 'read',
        refusedCall: 'GET /v1/newsletter/issues/by-slug/scan-0',
        until: new Date(clock.now() + 60_000).toISOString(),
        retryAfterSeconds: 60,
      }),
    ]);
  });
});
