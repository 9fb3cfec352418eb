import { Server } from 'node:net';
import { describe, expect, it } from 'vitest';
import { createPrometheusMetrics, subscribeOutcome } from '../../src/node/admin/prometheus.js';
import { UpstreamError } from '../../src/core/upstream/transport.js';
import { sampleOf } from './admin-support.js';

describe('Prometheus metrics', () => {
  it('names each subscribe outcome from its log line outcome and reason', () => {
    expect(subscribeOutcome('forwarded', undefined)).toBe('forwarded');
    expect(subscribeOutcome('deduped', undefined)).toBe('deduped');
    expect(subscribeOutcome('honeypot', undefined)).toBe('honeypot');
    expect(subscribeOutcome('rejected', 'RATE_LIMITED')).toBe('rate_limited');
    expect(subscribeOutcome('rejected', 'CAPTCHA_FAILED')).toBe('captcha_failed');
    expect(subscribeOutcome('failed', 'CAPTCHA_UNAVAILABLE')).toBe('failed');
    expect(subscribeOutcome('refused_by_upstream', undefined)).toBe('refused');
    expect(subscribeOutcome('rejected', 'VALIDATION_ERROR')).toBe('rejected');
    expect(subscribeOutcome('failed', undefined)).toBe('failed');
    expect(subscribeOutcome('something new', undefined)).toBe('other');
  });

  it('folds unknown methods into `other`, so a client cannot add series', async () => {
    const { metrics, registry } = createPrometheusMetrics();
    metrics.request('other', 'PURGE', 404, 0.001);
    metrics.request('other', 'X-MADE-UP', 404, 0.001);
    const text = await registry.metrics();
    expect(sampleOf(text, 'newsletter_bff_http_requests_total{route="other",method="other",status="404"}')).toBe(2);
    expect(text).not.toContain('PURGE');
  });

  it('counts upstream calls by outcome, and leaves a held-off call (which never went out) out of the latency histogram', async () => {
    const { metrics, registry } = createPrometheusMetrics();
    metrics.upstreamCall('list_categories', 0.05);
    metrics.upstreamCall('list_categories', 8, new UpstreamError('timeout', 'upstream did not answer'));
    metrics.upstreamCall('list_categories', 0, new UpstreamError('rate_limited', 'holding off'));
    metrics.upstreamCall('create_subscriber', 0.1, new UpstreamError('rate_limited', 'slow down', { status: 429 }));
    metrics.upstreamHoldOff(30);
    metrics.upstreamRetry();
    const text = await registry.metrics();
    expect(sampleOf(text, 'newsletter_bff_upstream_calls_total{operation="list_categories",outcome="ok"}')).toBe(1);
    expect(sampleOf(text, 'newsletter_bff_upstream_calls_total{operation="list_categories",outcome="timeout"}')).toBe(1);
    expect(sampleOf(text, 'newsletter_bff_upstream_calls_total{operation="list_categories",outcome="held_off"}')).toBe(1);
    expect(sampleOf(text, 'newsletter_bff_upstream_calls_total{operation="create_subscriber",outcome="rate_limited"}')).toBe(1);
    expect(text).not.toContain('newsletter_bff_upstream_call_duration_seconds_count{operation="list_categories",outcome="held_off"}');
    expect(sampleOf(text, 'newsletter_bff_upstream_hold_off_seconds_total')).toBe(30);
    expect(sampleOf(text, 'newsletter_bff_upstream_retries_total')).toBe(1);
  });

  it('exposes every subscribe outcome and cache result from zero, before the first one happens', async () => {
    const { registry } = createPrometheusMetrics();
    const text = await registry.metrics();
    for (const outcome of ['forwarded', 'deduped', 'honeypot', 'rate_limited', 'refused', 'captcha_failed']) {
      expect(text).toContain(`newsletter_bff_subscribe_attempts_total{outcome="${outcome}"} 0`);
    }
    for (const result of ['hit', 'miss', 'stale']) expect(text).toContain(`newsletter_bff_cache_reads_total{result="${result}"} 0`);
  });

  it('counts stale answers by route and reason, each read route and reason from zero', async () => {
    const { metrics, registry } = createPrometheusMetrics();
    expect(await registry.metrics()).toContain('newsletter_bff_stale_answers_total{route="/api/issues/:slug",reason="timeout"} 0');
    metrics.staleAnswer('/api/issues', 'upstream_5xx');
    metrics.staleAnswer('/api/issues', 'upstream_5xx');
    metrics.staleAnswer('/api/categories', 'revalidating');
    const text = await registry.metrics();
    expect(sampleOf(text, 'newsletter_bff_stale_answers_total{route="/api/issues",reason="upstream_5xx"}')).toBe(2);
    expect(sampleOf(text, 'newsletter_bff_stale_answers_total{route="/api/categories",reason="revalidating"}')).toBe(1);
    expect(sampleOf(text, 'newsletter_bff_stale_answers_total{route="/api/categories",reason="backing_off"}')).toBe(0);
  });

  it('counts a subscribe body the client abandoned and one the listener timed out as outcomes of their own, from zero', async () => {
    const { metrics, registry } = createPrometheusMetrics();
    expect(await registry.metrics()).toContain('newsletter_bff_subscribe_attempts_total{outcome="timed_out"} 0');
    metrics.subscribe('abandoned', 'CLIENT_CLOSED_REQUEST');
    const text = await registry.metrics();
    expect(sampleOf(text, 'newsletter_bff_subscribe_attempts_total{outcome="abandoned"}')).toBe(1);
    expect(sampleOf(text, 'newsletter_bff_subscribe_attempts_total{outcome="rejected"}')).toBe(0);
  });

  it('reports whether Redis answers as redis_up, read at each scrape, and only when Redis is configured', async () => {
    const without = createPrometheusMetrics();
    expect(await without.registry.metrics()).not.toContain('redis_up');
    const { registry, watch } = createPrometheusMetrics();
    let healthy = true;
    const stats = () => ({ entries: 0, bytes: 0, notFoundEntries: 0, notFoundBytes: 0, renderedPages: 0, renderedPageBytes: 0 });
    watch({ stats, redisHealthy: () => healthy, publicServer: new Server() });
    expect(sampleOf(await registry.metrics(), 'newsletter_bff_redis_up')).toBe(1);
    healthy = false;
    expect(sampleOf(await registry.metrics(), 'newsletter_bff_redis_up')).toBe(0);
  });

  it('lists open connections, then the cache gauges, then redis_up, after the counters, in a stable order for a scrape to diff', async () => {
    const { registry, watch } = createPrometheusMetrics();
    const stats = () => ({ entries: 0, bytes: 0, notFoundEntries: 0, notFoundBytes: 0, renderedPages: 0, renderedPageBytes: 0 });
    watch({ stats, redisHealthy: () => true, publicServer: new Server() });
    const families = [...(await registry.metrics()).matchAll(/^# TYPE newsletter_bff_(\w+)/gm)].map((match) => match[1]);
    expect(families.slice(-5)).toEqual(['connections_shed_total', 'open_connections', 'cache_bytes', 'cache_entries', 'redis_up']);
  });
});
