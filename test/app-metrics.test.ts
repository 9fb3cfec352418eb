import { describe, expect, it } from 'vitest';
import { createApp } from '../src/core/app.js';
import { createDemoUpstream } from '../src/demo/upstream.js';
import { createUpstreamClient } from '../src/core/upstream/newsletter-api.js';
import { createFakeClock, TEST_API_KEY, testConfig } from './helpers.js';
import { createMetricsRecorder } from './metrics-recorder.js';

function setup() {
  const clock = createFakeClock();
  const demo = createDemoUpstream({ apiKey: TEST_API_KEY, now: clock.now });
  const recorder = createMetricsRecorder();
  const config = testConfig({ NEWSLETTER_API_BASE_URL: demo.baseUrl, SUBSCRIBE_RATE_LIMIT_PER_MINUTE: '1' });
  const upstream = createUpstreamClient({
    baseUrl: demo.baseUrl,
    apiKey: TEST_API_KEY,
    timeoutMs: 1000,
    fetch: demo.fetch,
    now: clock.now,
  });
  const { app } = createApp({ config, upstream, now: clock.now, clientIp: () => '203.0.113.7', metrics: recorder.metrics });
  return { app, ...recorder };
}

describe('app metrics', () => {
  it('reports each request by route template, method and status, and every unknown path as `other`', async () => {
    const { app, of } = setup();
    await app.request('/api/issues/planning-next-years-plot');
    await app.request('/api/categories', { method: 'PURGE' });
    await app.request('/wp-login.php?user=admin');
    expect(of('request').map(([route, method, status]) => [route, method, status])).toEqual([
      ['/api/issues/:slug', 'GET', 200],
      ['/api/categories', 'PURGE', 405],
      ['other', 'GET', 404],
    ]);
    for (const [, , , seconds] of of('request')) expect(seconds).toBeGreaterThanOrEqual(0);
  });

  it('reports each subscribe outcome as its log line names it, with the reason of a rejection', async () => {
    const { app, of } = setup();
    const subscribe = () =>
      app.request('/api/subscribe', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Origin: 'https://site.example' },
        body: JSON.stringify({ email: 'reader@example.com', optInAttestation: true }),
      });
    expect((await subscribe()).status).toBe(200);
    expect((await subscribe()).status).toBe(429);
    expect(of('subscribe')).toEqual([
      ['forwarded', undefined],
      ['rejected', 'RATE_LIMITED'],
    ]);
  });
});
