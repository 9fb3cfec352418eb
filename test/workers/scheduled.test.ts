import { createExecutionContext, env as bindings, waitOnExecutionContext } from 'cloudflare:test';
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
    if (call.url.pathname.endsWith('/newsletter/categories'))
      return jsonResponse({ ok: true, data: [{ id: 'c1', name: 'Tools', slug: 'tools' }] });
    const issue = {
      id: 'i1',
      slug: 'only-issue',
      subject: state.subject,
      status: 'sent',
      isPublic: true,
      sentAt: '2026-01-02T00:00:00.000Z',
    };
    return jsonResponse({ ok: true, data: call.url.searchParams.get('offset') === '0' ? [issue] : [] });
  });
  const env = {
    NEWSLETTER_API_KEY: TEST_API_KEY,
    NEWSLETTER_API_BASE_URL: `https://scheduled-${hostCounter}.test/v1`,
    NODE_ENV: 'production',
    CACHE_TTL_SECONDS: '60',
  };
  const lines: string[] = [];
  const isolate = () =>
    createWorker({ fetch: upstream.fetch, now: clock.now, write: (line) => lines.push(line), sharedCache: caches.default });
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

/** A KV namespace as wrangler.toml binds it (miniflare's, real in workerd). */
interface KvNamespace {
  get(key: string): Promise<string | null>;
  put(key: string, value: string): Promise<void>;
  delete(key: string): Promise<void>;
}

/** An upstream whose issues a test can add to and edit, a build hook receiver on the same fetch, and isolates sharing one KV namespace. */
async function hookSetup() {
  hostCounter += 1;
  const kv = bindings.DEPLOY_HOOK_STATE as KvNamespace;
  // One namespace for the suite's files: each test starts from no state.
  await kv.delete('archive-watch');
  const clock = createFakeClock();
  const issue = (slug: string, subject: string, day: number) => ({
    id: `id-${slug}`,
    slug,
    subject,
    status: 'sent',
    isPublic: true,
    sentAt: `2026-01-${String(day).padStart(2, '0')}T09:00:00.000Z`,
    createdAt: `2026-01-${String(day - 1).padStart(2, '0')}T09:00:00.000Z`,
    updatedAt: `2026-01-${String(day).padStart(2, '0')}T09:00:00.000Z`,
  });
  const state = {
    issues: [issue('second-issue', 'Second', 3), issue('first-issue', 'First', 2)],
    hookStatuses: [] as number[],
    down: false,
  };
  const hookCalls: { status: number; body: { changes: { slug: string; kind: string }[] } }[] = [];
  const upstream = createScriptedFetch(async (call) => {
    if (call.url.hostname === 'hooks.example') {
      const status = state.hookStatuses.shift() ?? 200;
      hookCalls.push({ status, body: JSON.parse(call.body ?? '{}') as { changes: { slug: string; kind: string }[] } });
      return new Response('{}', { status });
    }
    if (state.down) return new Response('unavailable', { status: 503 });
    if (call.url.pathname.endsWith('/newsletter/categories')) return jsonResponse({ ok: true, data: [] });
    const offset = Number(call.url.searchParams.get('offset'));
    const limit = Number(call.url.searchParams.get('limit'));
    return jsonResponse({ ok: true, data: state.issues.slice(offset, offset + limit) });
  });
  const env = {
    NEWSLETTER_API_KEY: TEST_API_KEY,
    NEWSLETTER_API_BASE_URL: `https://scheduled-${hostCounter}.test/v1`,
    NODE_ENV: 'production',
    CACHE_TTL_SECONDS: '60',
    DEPLOY_HOOK_URL: 'https://hooks.example/build_hooks/workers-hook-token-not-real',
    DEPLOY_HOOK_STATE: kv,
  };
  const lines: string[] = [];
  const isolate = () =>
    createWorker({ fetch: upstream.fetch, now: clock.now, write: (line) => lines.push(line), sharedCache: caches.default });
  /** A run a minute and a second after the last: the copies are past their TTL of 60 s. */
  async function run(worker: ReturnType<typeof createWorker>) {
    clock.advance(61_000);
    const ctx = createExecutionContext();
    await worker.scheduled({ ...CRON, scheduledTime: clock.now() }, env, ctx);
    await waitOnExecutionContext(ctx);
  }
  return { clock, state, issue, hookCalls, upstream, lines, isolate, run, kv };
}

describe('the build hook from the Cron Trigger (DEPLOY_HOOK_URL)', () => {
  it('makes no call on its first run, and one per change after, wherever the run lands, its state in the KV namespace', async () => {
    const { state, issue, hookCalls, lines, isolate, run, kv } = await hookSetup();
    await run(isolate());
    expect(hookCalls).toEqual([]);
    expect(await kv.get('archive-watch')).toContain('second-issue');
    // The next runs land in new isolates, which know nothing but the KV namespace.
    state.issues.unshift(issue('third-issue', 'Third', 4));
    await run(isolate());
    expect(hookCalls.map((call) => call.body.changes)).toEqual([[{ slug: 'third-issue', kind: 'new' }]]);
    const later = isolate();
    await run(later);
    await run(later);
    expect(hookCalls).toHaveLength(1);
    state.issues[1] = { ...state.issues[1]!, subject: 'Second, corrected', updatedAt: '2026-01-05T09:00:00.000Z' };
    await run(isolate());
    expect(hookCalls.map((call) => call.body.changes)).toEqual([
      [{ slug: 'third-issue', kind: 'new' }],
      [{ slug: 'second-issue', kind: 'edited' }],
    ]);
    expect(lines.join('\n')).not.toContain('workers-hook-token-not-real');
    expect(lines.join('\n')).not.toContain(TEST_API_KEY);
  });

  it('retries a failed call at a later run, also one whose refresh failed', async () => {
    const { state, issue, hookCalls, lines, isolate, run } = await hookSetup();
    const worker = isolate();
    await run(worker);
    state.issues.unshift(issue('third-issue', 'Third', 4));
    state.hookStatuses.push(500);
    await run(worker);
    expect(hookCalls.map((call) => call.status)).toEqual([500]);
    // The upstream down at the next run: nothing to compare, but the call due is made.
    state.down = true;
    await run(worker);
    expect(lines.filter((line) => line.includes('"scheduled_refresh_failed"'))).toHaveLength(1);
    expect(hookCalls.map((call) => call.status)).toEqual([500, 200]);
    expect(hookCalls[1]!.body.changes).toEqual([{ slug: 'third-issue', kind: 'new' }]);
  });
});
