import { describe, expect, it } from 'vitest';
import { runCheck } from '../../src/check.js';
import { createArchive } from '../../src/fake-upstream/archive.js';
import { createFakeUpstream } from '../../src/fake-upstream/fake.js';
import type { UpstreamVariant } from '../../src/fake-upstream/variant.js';
import { createAppForConfig } from '../../src/service.js';
import { createFakeClock, createLogCapture, testConfig } from '../helpers.js';

const KEY = 'fake-key-for-variants-not-real';
const ARCHIVE_SIZE = 250;
const LIST_CALLS = 'GET /newsletter/issues';

/**
 * The site and `check` over a fake upstream that honours every documented fact but answers one
 * "not shown" fact otherwise (src/fake-upstream/variant.ts), with 250 public issues.
 */
async function siteOver(variant: UpstreamVariant, env: Record<string, string> = {}) {
  const fake = createFakeUpstream({ apiKey: KEY, variant, publication: createArchive({ issues: ARCHIVE_SIZE, contentBytes: 100 }) });
  const config = testConfig({ NEWSLETTER_API_KEY: KEY, NEWSLETTER_API_BASE_URL: fake.baseUrl, ...env });
  const clock = createFakeClock();
  const logs = createLogCapture(clock.now);
  const { app } = createAppForConfig(config, { log: logs.log, clientIp: () => '203.0.113.7', fetch: fake.fetch, now: clock.now });
  const response = await app.request('/api/issues?limit=10');
  const body = (await response.json()) as { meta?: { total: number } };
  const listCalls = fake.callsFor(LIST_CALLS);
  const check = await runCheck(config, { fetch: fake.fetch, now: clock.now });
  const warnings = logs.entries().filter((entry) => entry.level === 'warn');
  return { fake, app, logs, status: response.status, total: body.meta?.total, listCalls, warnings, check, failures: check.findings.filter((f) => f.status === 'fail').map((f) => f.message) };
}

describe('an upstream that pages as the assumptions guess', () => {
  it('serves the whole archive in 3 calls (200, 50, empty) with no warning, and check exits 0', async () => {
    const site = await siteOver({});
    expect([site.total, site.listCalls, site.warnings, site.check.exitCode]).toEqual([ARCHIVE_SIZE, 3, [], 0]);
  });
});

describe('an upstream whose row-limit parameter is not called limit (pages of 50 come back)', () => {
  const variant: UpstreamVariant = { limitParam: 'per_page' };

  it('serves the whole archive, logs one warn line naming UPSTREAM_LIST_LIMIT_PARAM, and check exits 1 saying the limit is ignored', async () => {
    const site = await siteOver(variant);
    expect([site.status, site.total, site.listCalls]).toEqual([200, ARCHIVE_SIZE, 6]);
    expect(site.warnings).toEqual([expect.objectContaining({ event: 'upstream_paging', problems: 'row_count_mismatch' })]);
    expect(site.warnings[0]?.set).toContain('UPSTREAM_LIST_LIMIT_PARAM');
    expect(site.check.exitCode).toBe(1);
    expect(site.failures.join('\n')).toContain('ignored limit=1 and answered 50 rows');
  });

  it('reads full pages without a warning once UPSTREAM_LIST_LIMIT_PARAM names it', async () => {
    const site = await siteOver(variant, { UPSTREAM_LIST_LIMIT_PARAM: 'per_page' });
    expect([site.total, site.listCalls, site.warnings, site.check.exitCode]).toEqual([ARCHIVE_SIZE, 3, [], 0]);
  });
});

describe('an upstream that caps pages at 100 rows whatever is asked', () => {
  it('serves the whole archive, logs one warn line, and check exits 1 naming UPSTREAM_LIST_PAGE_SIZE', async () => {
    const site = await siteOver({ pageCap: 100 });
    expect([site.total, site.listCalls]).toEqual([ARCHIVE_SIZE, 4]);
    expect(site.warnings).toEqual([expect.objectContaining({ event: 'upstream_paging', problems: 'row_count_mismatch' })]);
    expect(site.check.exitCode).toBe(1);
    expect(site.failures.join('\n')).toContain('UPSTREAM_LIST_PAGE_SIZE=100');
  });

  it('is quiet once UPSTREAM_LIST_PAGE_SIZE=100 says so', async () => {
    const site = await siteOver({ pageCap: 100 }, { UPSTREAM_LIST_PAGE_SIZE: '100' });
    expect([site.total, site.listCalls, site.warnings, site.check.exitCode]).toEqual([ARCHIVE_SIZE, 4, [], 0]);
  });
});

describe('an upstream that pages by page number, not offset', () => {
  const variant: UpstreamVariant = { paging: { style: 'page', param: 'page' } };

  it('serves the first page, logs one warn line that the second page repeated it, and check exits 1 naming UPSTREAM_LIST_PAGING', async () => {
    const site = await siteOver(variant);
    expect([site.total, site.listCalls]).toEqual([200, 2]);
    expect(site.warnings).toEqual([expect.objectContaining({ event: 'upstream_paging', problems: 'repeated_page' })]);
    expect(site.warnings[0]?.set).toContain('UPSTREAM_LIST_PAGING');
    expect(site.check.exitCode).toBe(1);
    expect(site.failures.join('\n')).toContain('paging by offset under offset does not work');
  });

  it('serves the whole archive once UPSTREAM_LIST_PAGING=page', async () => {
    const site = await siteOver(variant, { UPSTREAM_LIST_PAGING: 'page' });
    expect([site.total, site.listCalls, site.warnings, site.check.exitCode]).toEqual([ARCHIVE_SIZE, 3, [], 0]);
  });
});

describe('an upstream with one issue whose subject is null', () => {
  it('serves the other 249 issues, logs one warn line with its id, and check exits 1 counting the dropped row', async () => {
    const site = await siteOver({ nullSubjectSlug: 'issue-7-weekly-notes' });
    expect([site.status, site.total, site.listCalls]).toEqual([200, ARCHIVE_SIZE - 1, 3]);
    expect(site.warnings).toEqual([expect.objectContaining({ event: 'upstream_rows_dropped', count: 1, ids: 'iss_000007' })]);
    expect(site.check.exitCode).toBe(1);
    expect(site.failures).toEqual(['1 malformed issue row dropped, not served (ids iss_000007)']);
  });

  it('still answers that issue alone with 502', async () => {
    const site = await siteOver({ nullSubjectSlug: 'issue-7-weekly-notes' });
    expect((await site.app.request('/api/issues/issue-7-weekly-notes')).status).toBe(502);
  });
});

describe('an upstream that answers Create Subscriber with a pending subscriber (double opt-in)', () => {
  it('answers the visitor as subscribed and tells the owner of the new state once, at info', async () => {
    const site = await siteOver({ pendingSubscribers: true });
    const subscribe = (email: string) =>
      site.app.request('/api/subscribe', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
        body: JSON.stringify({ email, optInAttestation: true }),
      });
    const before = site.fake.demo.subscribers.size;
    expect((await subscribe('first@example.com')).status).toBe(200);
    expect((await subscribe('second@example.com')).status).toBe(200);
    expect(site.fake.demo.subscribers.size).toBe(before + 2);
    const notices = site.logs.entries().filter((entry) => entry.event === 'upstream_unknown_status');
    expect(notices).toEqual([expect.objectContaining({ level: 'info', resource: 'subscriber', status: 'pending' })]);
    // check never subscribes, so it cannot see this; nothing of the site breaks either.
    expect(site.check.exitCode).toBe(0);
  });
});
