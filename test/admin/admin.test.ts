import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { promtoolCheck, sampleOf, startServiceWithAdmin } from './admin-support.js';

type Service = Awaited<ReturnType<typeof startServiceWithAdmin>>;
let service: Service | undefined;
const start = async (options?: Parameters<typeof startServiceWithAdmin>[0]) => (service = await startServiceWithAdmin(options));

afterEach(async () => {
  await service?.stop();
  service = undefined;
});

describe('admin listener /healthz and the public port', () => {
  it('answers /healthz with 200 on the admin port, and none of its routes on the public port', async () => {
    const s = await start();
    const health = await s.adminGet('/healthz');
    expect(health.status).toBe(200);
    expect(health.headers.get('cache-control')).toBe('no-store');
    expect(await health.text()).toBe('ok\n');
    for (const path of ['/healthz', '/readyz', '/metrics']) {
      const res = await s.get(path);
      expect(res.status).toBe(404);
      expect(await res.json()).toMatchObject({ ok: false, error: { code: 'NOT_FOUND' } });
    }
    expect((await s.adminGet('/api/categories')).status).toBe(404);
  });
});

describe('admin listener /readyz', () => {
  it('is 503 while the public listener is shedding connections, without an upstream call, and 200 once it stops', async () => {
    let shedding = false;
    const s = await start({ shedding: () => shedding });
    expect((await s.adminGet('/readyz')).status).toBe(200);
    shedding = true;
    const calls = s.upstream.requests.length;
    const atCap = await s.adminGet('/readyz');
    expect(atCap.status).toBe(503);
    expect(await atCap.text()).toBe('not ready: the public listener is shedding connections (MAX_CONNECTIONS)\n');
    expect(s.upstream.requests.length).toBe(calls);
    shedding = false;
    expect((await s.adminGet('/readyz')).status).toBe(200);
  });

  it('reports the real listener shedding a slowloris crowd, and counts the connections shed by reason', async () => {
    const s = await start({ limits: { maxConnections: 16, overShareAfterMs: 50, slowHeadGraceMs: 5000, sheddingReportMs: 60_000 } });
    expect((await s.adminGet('/readyz')).status).toBe(200);
    const before = await s.scrape();
    for (const reason of ['idle', 'slow_head', 'over_share'])
      expect(before).toContain(`newsletter_bff_connections_shed_total{reason="${reason}"} 0`);
    const port = Number(new URL(s.publicUrl).port);
    const crowd = [];
    for (let index = 0; index < 40; index += 1) {
      const socket = connect({ port, host: '127.0.0.1', localAddress: '127.0.0.2' });
      socket.on('error', () => {});
      crowd.push(socket);
      await new Promise((resolve) => socket.once('connect', resolve).once('close', resolve));
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
    const shedding = await s.adminGet('/readyz');
    expect(shedding.status).toBe(503);
    expect(await shedding.text()).toBe('not ready: the public listener is shedding connections (MAX_CONNECTIONS)\n');
    expect(sampleOf(await s.scrape(), 'newsletter_bff_connections_shed_total{reason="over_share"}')).toBeGreaterThanOrEqual(40 - 16);
    for (const socket of crowd) socket.destroy();
  });

  it('is 503 until the upstream answers once, then 200; one probe per check while not ready', async () => {
    const s = await start();
    s.upstream.setMode({ kind: 'html' });
    const before = s.upstream.requests.length;
    const waiting = await s.adminGet('/readyz');
    expect(waiting.status).toBe(503);
    expect(await waiting.text()).toBe('not ready: the upstream has not answered yet\n');
    expect(s.upstream.requestsSince(before).map((r) => r.path)).toEqual(['/v1/newsletter/categories']);

    s.upstream.setMode({ kind: 'ok' });
    const ready = await s.adminGet('/readyz');
    expect(ready.status).toBe(200);
    expect(await ready.text()).toBe('ready\n');
    // Ready: the check itself makes no upstream call.
    const calls = s.upstream.requests.length;
    expect((await s.adminGet('/readyz')).status).toBe(200);
    expect(s.upstream.requests.length).toBe(calls);
  });

  it('turns 503 once every upstream call has failed for ADMIN_UNREADY_AFTER_SECONDS, and 200 when it answers again', async () => {
    const s = await start({ unreadyAfterSeconds: 60 });
    expect((await s.get('/api/categories')).status).toBe(200);
    expect((await s.adminGet('/readyz')).status).toBe(200);

    s.upstream.setMode({ kind: 'html' });
    // Subscribes: each goes upstream (the reads are answered from the copies the categories read kept).
    const subscribe = (email: string) =>
      s.get('/api/subscribe', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Origin: 'https://site.example' },
        body: JSON.stringify({ email, optInAttestation: true }),
      });
    expect((await subscribe('first@example.com')).status).toBe(502);
    s.clock.advance(59_000);
    expect((await subscribe('second@example.com')).status).toBe(502);
    // Failing for 59 s: the cache bridges a short outage, so still in rotation.
    expect((await s.adminGet('/readyz')).status).toBe(200);

    s.clock.advance(1_000);
    const down = await s.adminGet('/readyz');
    expect(down.status).toBe(503);
    expect(await down.text()).toBe('not ready: every upstream call has failed for 60 s\n');

    s.upstream.setMode({ kind: 'ok' });
    // No traffic reaches an instance out of rotation: the check's own probe sees the upstream back.
    expect((await s.adminGet('/readyz')).status).toBe(200);
  });

  it('answers 503 once the process is draining', async () => {
    const s = await start();
    expect((await s.get('/api/categories')).status).toBe(200);
    s.admin.drain();
    const res = await s.adminGet('/readyz');
    expect(res.status).toBe(503);
    expect(await res.text()).toBe('not ready: shutting down\n');
  });
});

describe('admin listener /metrics', () => {
  it('moves the request, cache, upstream and subscribe series as requests are made', async () => {
    const s = await start();
    const before = await s.scrape();
    expect(sampleOf(before, 'newsletter_bff_cache_reads_total{result="miss"}')).toBe(0);

    const slug = 'planning-next-years-plot';
    for (let i = 0; i < 3; i += 1) expect((await s.get(`/api/issues/${slug}`)).status).toBe(200);
    expect((await s.get('/api/issues/no-such-issue-here')).status).toBe(404);
    const subscribe = (email: string, extra = {}) =>
      s.get('/api/subscribe', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Origin: 'https://site.example' },
        body: JSON.stringify({ email, optInAttestation: true, ...extra }),
      });
    expect((await subscribe('reader@example.com')).status).toBe(200);
    expect((await subscribe('reader@example.com')).status).toBe(200);
    expect((await subscribe('bot@example.com', { website: 'https://spam.example' })).status).toBe(200);

    const after = await s.scrape();
    const expected = {
      'newsletter_bff_http_requests_total{route="/api/issues/:slug",method="GET",status="200"}': 3,
      'newsletter_bff_http_requests_total{route="/api/issues/:slug",method="GET",status="404"}': 1,
      'newsletter_bff_http_request_duration_seconds_count{route="/api/issues/:slug",method="GET"}': 4,
      // The issue and the archive index read for its neighbours; then the issue twice, and the
      // index that settles the unknown slug without asking the upstream.
      'newsletter_bff_cache_reads_total{result="miss"}': 2,
      'newsletter_bff_cache_reads_total{result="hit"}': 3,
      'newsletter_bff_upstream_calls_total{operation="get_issue_by_slug",outcome="ok"}': 1,
      'newsletter_bff_upstream_calls_total{operation="get_issue_by_slug",outcome="not_found"}': 0,
      'newsletter_bff_upstream_calls_total{operation="list_issues",outcome="ok"}': 2,
      'newsletter_bff_upstream_calls_total{operation="create_subscriber",outcome="ok"}': 1,
      'newsletter_bff_subscribe_attempts_total{outcome="forwarded"}': 1,
      'newsletter_bff_subscribe_attempts_total{outcome="deduped"}': 1,
      'newsletter_bff_subscribe_attempts_total{outcome="honeypot"}': 1,
      // The index, and the letter of each of the demo's 48 public issues its rows carried.
      'newsletter_bff_cache_entries{cache="upstream_data"}': 1 + 48,
    };
    expect(Object.fromEntries(Object.keys(expected).map((series) => [series, sampleOf(after, series)]))).toEqual(expected);
    expect(sampleOf(after, 'newsletter_bff_cache_bytes{cache="upstream_data"}')).toBeGreaterThan(0);
    // Route templates only: no slug ever becomes a label value.
    expect(after).not.toContain(slug);
    expect(after).not.toContain('no-such-issue-here');
  });

  it('counts the open connections of the public listener', async () => {
    const s = await start();
    const socket = connect(Number(new URL(s.publicUrl).port), '127.0.0.1');
    // One answered keep-alive request: the server has surely accepted this connection.
    const answered = new Promise<void>((resolve) => socket.once('data', () => resolve()));
    socket.write('GET /api/categories HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    await answered;
    expect(sampleOf(await s.scrape(), 'newsletter_bff_open_connections')).toBeGreaterThanOrEqual(1);
    socket.destroy();
  });

  // CI installs promtool (.ci/run): there this check must run, never skip.
  const promtoolMissing = promtoolCheck('') === undefined;
  it.skipIf(promtoolMissing && !process.env.CI)('passes `promtool check metrics` after a short load', async () => {
    const s = await start();
    for (const path of ['/api/issues?limit=2', '/api/categories', '/api/issues/no-such-issue-here', '/nowhere']) await s.get(path);
    const check = promtoolCheck(await s.scrape());
    if (check === undefined) throw new Error('promtool is not installed (apt-get install -y prometheus); CI must run this check');
    expect(check.output).toBe('');
    expect(check.status).toBe(0);
  });
});
