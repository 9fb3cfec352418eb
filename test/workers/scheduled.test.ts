import { createExecutionContext, waitOnExecutionContext } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { createWorker } from '../../src/workers/handler.js';
import { createFakeClock, createScriptedFetch, jsonResponse, TEST_API_KEY } from '../helpers.js';

let hostCounter = 0;
const CRON = { cron: '* * * * *', scheduledTime: 0 };

/** An upstream with one issue whose subject can change, and isolates sharing caches.default. */
function setup() {
  hostCounter += 1;
  const clock = createFakeClock();
  const state = { subject: 'Original', down: false };
  const upstream = createScriptedFetch((call) => {
    if (state.down) return new Response('unavailable', { status: 503 });
    if (call.url.pathname.endsWith('/newsletter/categories')) return jsonResponse({ ok: true, data: [{ id: 'c1', name: 'Tools', slug: 'tools' }] });
    const issue = { id: 'i1', slug: 'only-issue', subject: state.subject, status: 'sent', isPublic: true, sentAt: '2026-01-02T00:00:00.000Z' };
    return jsonResponse({ ok: true, data: call.url.searchParams.get('offset') === '0' ? [issue] : [] });
  });
  const env = {
    NEWSLETTER_API_KEY: TEST_API_KEY,
    NEWSLETTER_API_BASE_URL: `https://scheduled-${hostCounter}.test/v1`,
    NODE_ENV: 'production',
    CACHE_TTL_SECONDS: '60',
  };
  const lines: string[] = [];
  const isolate = () => createWorker({ fetch: upstream.fetch, now: clock.now, write: (line) => lines.push(line), sharedCache: caches.default });
  async function run(worker: ReturnType<typeof createWorker>) {
    const ctx = createExecutionContext();
    await worker.scheduled({ ...CRON, scheduledTime: clock.now() }, env, ctx);
    await waitOnExecutionContext(ctx);
  }
  async function get(worker: ReturnType<typeof createWorker>, path: string) {
    const ctx = createExecutionContext();
    const response = await worker.fetch(new Request(`https://bff.example${path}`), env, ctx);
    await waitOnExecutionContext(ctx);
    return response;
  }
  return { clock, state, upstream, lines, isolate, run, get, env };
}

describe('the Cron Trigger refresh (scheduled)', () => {
  it('puts the archive and the categories in the shared tier: a new isolate answers both with no upstream call', async () => {
    const { upstream, lines, isolate, run, get } = setup();
    await run(isolate());
    const calls = upstream.calls.length;
    expect(calls).toBeGreaterThanOrEqual(2);
    const visitor = isolate();
    const archive = await get(visitor, '/api/issues');
    expect(archive.status).toBe(200);
    expect(((await archive.json()) as { data: { slug: string }[] }).data.map((issue) => issue.slug)).toEqual(['only-issue']);
    expect((await get(visitor, '/api/categories')).status).toBe(200);
    expect(upstream.calls.length).toBe(calls);
    expect(lines.map((line) => JSON.parse(line) as Record<string, unknown>)).toContainEqual(
      expect.objectContaining({ level: 'info', event: 'scheduled_refresh', cron: '* * * * *', issues: 1 }),
    );
    expect(lines.join('\n')).not.toContain(TEST_API_KEY);
  });

  it('reads the upstream again on every run, even while the copies are fresh, so a visitor finds the new content', async () => {
    const { clock, state, isolate, run, get } = setup();
    const cron = isolate();
    await run(cron);
    state.subject = 'Revised';
    clock.advance(30_000);
    await run(cron);
    const response = await get(isolate(), '/api/issues');
    expect(((await response.json()) as { data: { subject: string }[] }).data[0]!.subject).toBe('Revised');
    expect(response.headers.get('x-cache')).toBe('MISS');
  });

  it('keeps the copies when the upstream fails, logs one warn line and throws nothing', async () => {
    const { clock, state, lines, isolate, run, get } = setup();
    await run(isolate());
    state.down = true;
    clock.advance(120_000);
    await run(isolate());
    const warnings = lines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((entry) => entry.level === 'warn');
    expect(warnings.filter((entry) => entry.event === 'scheduled_refresh_failed')).toHaveLength(1);
    const stale = await get(isolate(), '/api/issues');
    expect(stale.status).toBe(200);
    expect(stale.headers.get('x-cache')).toBe('STALE');
  });

  it('says a run failed when the isolate that runs it holds the copies it could not refresh', async () => {
    const { clock, state, lines, isolate, run } = setup();
    const cron = isolate();
    await run(cron);
    state.down = true;
    clock.advance(120_000);
    await run(cron);
    const entries = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(entries.filter((entry) => entry.event === 'scheduled_refresh')).toHaveLength(1);
    expect(entries.filter((entry) => entry.event === 'scheduled_refresh_failed')).toHaveLength(1);
  });

  it('does nothing but the configuration lines when the Worker is misconfigured', async () => {
    const { upstream, lines, env } = setup();
    const worker = createWorker({ fetch: upstream.fetch, write: (line) => lines.push(line), sharedCache: null });
    const ctx = createExecutionContext();
    await worker.scheduled(CRON, { ...env, NEWSLETTER_API_BASE_URL: 'http://not-https.example' }, ctx);
    await waitOnExecutionContext(ctx);
    expect(upstream.calls).toHaveLength(0);
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.every((line) => line.includes('"config_error"'))).toBe(true);
  });
});
