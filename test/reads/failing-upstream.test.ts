import { describe, expect, it } from 'vitest';
import { createAppForConfig } from '../../src/core/app.js';
import { BACKOFF_CAP_MS } from '../../src/core/upstream/hold-off.js';
import { createFakeUpstream } from '../support/fake-upstream/fake.js';
import { createFakeClock, createLogCapture, createTestApp, TEST_API_KEY, TEST_BASE_URL, testConfig } from '../helpers.js';
import { createMetricsRecorder } from '../metrics-recorder.js';
import type { Metrics } from '../../src/core/metrics.js';

// docs/upstream.md "Backing off a failing upstream" and "One line per spell": five readers polling
// a site at CACHE_TTL_SECONDS=2 while the upstream fails, on a fake clock (issue 45's table).

const TTL_MS = 2000;
const READERS = 5;
const STEP_MS = 200;

/** Lets the loads the reads started behind their answers run to their end (no time passes). */
async function settle(): Promise<void> {
  for (let turn = 0; turn < 2; turn += 1) await new Promise((resolve) => setTimeout(resolve, 0));
}

/** Upstream calls the fake answered, of every operation. */
function callsOf(fake: ReturnType<typeof createFakeUpstream>): number {
  const { unknownSlugCalls: _unknown, ...byOperation } = fake.counts();
  return Object.values(byOperation).reduce((sum: number, count) => sum + Number(count), 0);
}

/** The service over the fake upstream, warmed on `paths`. */
async function startSite(paths: readonly string[], options: { metrics?: Metrics } = {}) {
  const clock = createFakeClock();
  const fake = createFakeUpstream({ apiKey: TEST_API_KEY, baseUrl: TEST_BASE_URL, now: clock.now });
  const site = createTestApp({ fetch: fake.fetch, clock, env: { CACHE_TTL_SECONDS: String(TTL_MS / 1000) }, metrics: options.metrics });
  for (const path of ['/api/issues', ...paths]) expect((await site.app.request(path)).status).toBe(200);
  await settle();
  return { ...site, fake };
}

/**
 * Five readers read every path each STEP_MS for `ms` of the fake clock; what they were answered.
 * `onAnswer` sees each answer's X-Cache at the time it came.
 */
async function poll(
  site: Awaited<ReturnType<typeof startSite>>,
  paths: readonly string[],
  ms: number,
  onAnswer?: (path: string, state: string, at: number) => void,
) {
  const answers = { total: 0, byStatus: new Map<string, number>() };
  for (let elapsed = 0; elapsed < ms; elapsed += STEP_MS) {
    const round = [];
    for (let reader = 0; reader < READERS; reader += 1)
      for (const path of paths) round.push(Promise.resolve(site.app.request(path)).then((response) => ({ path, response })));
    for (const { path, response } of await Promise.all(round)) {
      const state = response.headers.get('x-cache') ?? 'none';
      const key = `${response.status} ${state}`;
      answers.total += 1;
      answers.byStatus.set(key, (answers.byStatus.get(key) ?? 0) + 1);
      onAnswer?.(path, state, site.clock.now());
      await response.arrayBuffer();
    }
    await settle();
    site.clock.advance(STEP_MS);
  }
  return answers;
}

const warnLines = (logs: ReturnType<typeof createLogCapture>) => logs.entries().filter((entry) => entry.level !== 'info');

/** Thousands of requests, each checked against openapi.json: more than the default 20 s on a loaded machine, bounded all the same. */
const SIMULATION_TIMEOUT_MS = 60_000;

describe.each([
  ['the archive and the categories', ['/api/issues', '/api/categories']],
  // Its copy is checked against the archive index, which is refreshed first (a visitor reads the archive before an issue).
  ['an issue by slug', ['/api/issues/planning-next-years-plot']],
] as const)('five readers of %s for 40 s against an upstream answering 500', (_label, paths) => {
  it(
    'make at most 30 upstream calls, are all served the stale copies, and write one warn line',
    async () => {
      const site = await startSite(paths);
      const before = callsOf(site.fake);
      site.fake.setMode({ kind: 'status-storm', statuses: [500] });
      const answers = await poll(site, paths, 40_000);

      expect(callsOf(site.fake) - before).toBeLessThanOrEqual(30);
      // Fresh for the first 2 s, then stale: never an error.
      expect([...answers.byStatus.keys()].sort()).toEqual(['200 HIT', '200 STALE']);
      expect(answers.total).toBe(READERS * paths.length * (40_000 / STEP_MS));
      expect(warnLines(site.logs)).toEqual([
        expect.objectContaining({ level: 'warn', event: 'upstream_failure', reason: 'upstream_5xx', status: 500 }),
      ]);
    },
    SIMULATION_TIMEOUT_MS,
  );

  it(
    'serve a fresh answer within the cap and a TTL after the upstream recovers, and log the spell’s end once with the reads it affected',
    async () => {
      const site = await startSite(paths);
      site.fake.setMode({ kind: 'status-storm', statuses: [500] });
      const stale = await poll(site, paths, 40_000);
      const staleAnswers = stale.byStatus.get('200 STALE') ?? 0;

      site.fake.setMode({ kind: 'ok' });
      const recoveredAt = site.clock.now();
      const firstFresh = new Map<string, number>();
      let staleAfterRecovery = 0;
      await poll(site, paths, BACKOFF_CAP_MS + TTL_MS + 2 * STEP_MS, (path, state, at) => {
        if (state === 'STALE') staleAfterRecovery += 1;
        else if (!firstFresh.has(path)) firstFresh.set(path, at - recoveredAt);
      });
      for (const path of paths) expect(firstFresh.get(path), path).toBeLessThanOrEqual(BACKOFF_CAP_MS + TTL_MS);

      const ended = site.logs.entries().filter((entry) => entry.event === 'upstream_failure_ended');
      expect(ended).toEqual([expect.objectContaining({ level: 'info', reason: 'upstream_5xx', endedBy: 'recovered' })]);
      // Every stale answer while the spell lasted is one it affected (the first round's, before it began, were a refresh's).
      expect(ended[0]!.readsAffected).toBeGreaterThanOrEqual(staleAnswers - READERS * paths.length);
      expect(ended[0]!.readsAffected).toBeLessThanOrEqual(staleAnswers + staleAfterRecovery);
      expect(warnLines(site.logs)).toHaveLength(1);
    },
    SIMULATION_TIMEOUT_MS,
  );
});

describe('a healthy upstream (the twin)', () => {
  it('is asked once per TTL per copy and logs no spell', async () => {
    const paths = ['/api/issues', '/api/categories'];
    const site = await startSite(paths);
    const before = callsOf(site.fake);
    const answers = await poll(site, paths, 10_000);
    expect([...answers.byStatus.keys()].sort()).toEqual(['200 HIT', '200 STALE']);
    // At most one refresh of each copy per TTL (a whole archive read may take two pages).
    expect(callsOf(site.fake) - before).toBeLessThanOrEqual(2 * 2 * (10_000 / TTL_MS + 1));
    expect(site.logs.entries().filter((entry) => String(entry.event).startsWith('upstream_failure'))).toEqual([]);
  });
});

describe('stale answers in the metrics', () => {
  it('are counted by route and reason: a refresh under way, or the spell under way', async () => {
    const recorder = createMetricsRecorder();
    const paths = ['/api/issues', '/api/categories'];
    const site = await startSite(paths, { metrics: recorder.metrics });
    site.fake.setMode({ kind: 'status-storm', statuses: [500] });
    const answers = await poll(site, paths, 10_000);
    const counted = new Map<string, number>();
    for (const [route, reason] of recorder.of('staleAnswer'))
      counted.set(`${String(route)} ${String(reason)}`, (counted.get(`${String(route)} ${String(reason)}`) ?? 0) + 1);
    expect([...counted.keys()].sort()).toEqual([
      '/api/categories revalidating',
      '/api/categories upstream_5xx',
      '/api/issues revalidating',
      '/api/issues upstream_5xx',
    ]);
    expect(recorder.of('staleAnswer')).toHaveLength(answers.byStatus.get('200 STALE')!);
    // Most stale answers were the spell's; only those before it began were a refresh's.
    expect(counted.get('/api/issues upstream_5xx')!).toBeGreaterThan(10 * counted.get('/api/issues revalidating')!);
  });
});

describe('a 429 that holds reads off for 30 s, with 500 reads meanwhile', () => {
  it('writes one warn line (upstream_hold_off) and one info line when it is over, whatever the traffic', async () => {
    const clock = createFakeClock();
    const logs = createLogCapture(clock.now);
    const fake = createFakeUpstream({ apiKey: TEST_API_KEY, baseUrl: TEST_BASE_URL, now: clock.now });
    const { app } = createAppForConfig(testConfig({ CACHE_TTL_SECONDS: '2' }), {
      log: logs.log,
      clientIp: () => '198.51.100.7',
      fetch: fake.fetch,
      now: clock.now,
    });
    const paths = ['/api/issues', '/api/categories'];
    for (const path of paths) expect((await app.request(path)).status).toBe(200);
    fake.setMode({ kind: 'rate-limited', retryAfter: '30' });
    clock.advance(TTL_MS + 1);

    let reads = 0;
    for (let round = 0; round < 50; round += 1) {
      const answers = await Promise.all(Array.from({ length: 10 }, (_, n) => app.request(paths[n % 2]!)));
      reads += answers.length;
      expect(answers.map((answer) => answer.status)).toEqual(Array(10).fill(200));
      await settle();
      clock.advance(500);
    }
    expect(reads).toBe(500);
    fake.setMode({ kind: 'ok' });
    clock.advance(5_001);
    for (const path of paths) await app.request(path);
    await settle();

    expect(logs.entries().filter((entry) => entry.level !== 'info')).toEqual([
      expect.objectContaining({ level: 'warn', event: 'upstream_hold_off', operation: 'read', retryAfterSeconds: 30 }),
    ]);
    expect(logs.entries().filter((entry) => entry.event === 'upstream_failure_ended')).toEqual([
      expect.objectContaining({ level: 'info', reason: 'rate_limited', endedBy: 'recovered', readsAffected: expect.any(Number) }),
    ]);
  });
});
