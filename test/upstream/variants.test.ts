import { describe, expect, it } from 'vitest';
import { runCheck } from '../../src/tools/check.js';
import { createArchive } from '../support/fake-upstream/archive.js';
import { createFakeUpstream } from '../support/fake-upstream/fake.js';
import type { UpstreamVariant } from '../support/fake-upstream/variant.js';
import { createAppForConfig } from '../../src/core/app.js';
import { createFakeClock, createLogCapture, testConfig } from '../helpers.js';

const KEY = 'fake-key-for-variants-not-real';
const ARCHIVE_SIZE = 250;
const LIST_CALLS = 'GET /newsletter/issues';

/**
 * The site and `check` over a fake upstream that honours every documented fact but answers one
 * "not shown" fact otherwise (test/support/fake-upstream/variant.ts), with 250 public issues.
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
  const findings = await runCheck(config, { fetch: fake.fetch, now: clock.now });
  const warnings = logs.entries().filter((entry) => entry.level === 'warn');
  return {
    fake,
    app,
    logs,
    status: response.status,
    total: body.meta?.total,
    listCalls,
    warnings,
    failures: findings.filter((f) => f.status === 'fail').map((f) => f.message),
  };
}

describe('an upstream that pages as the assumptions guess', () => {
  it('serves the whole archive in 3 calls (200, 50, empty) with no warning, and check exits 0', async () => {
    const site = await siteOver({});
    expect([site.total, site.listCalls, site.warnings, site.failures]).toEqual([ARCHIVE_SIZE, 3, [], []]);
  });
});

/** A paging guess the upstream does not share: what a visitor and an owner see, and the fix. */
const PAGING_VARIANTS = [
  {
    upstream: 'reads its row limit under another name (pages of 50 come back)',
    variant: { limitParam: 'per_page' },
    served: { total: ARCHIVE_SIZE, listCalls: 6 },
    problem: 'row_count_mismatch',
    names: 'UPSTREAM_LIST_LIMIT_PARAM',
    checkSays: 'ignored limit=1 (50 rows)',
    fix: { UPSTREAM_LIST_LIMIT_PARAM: 'per_page' },
    fixedCalls: 3,
  },
  {
    upstream: 'caps pages at 100 rows whatever is asked',
    variant: { pageCap: 100 },
    served: { total: ARCHIVE_SIZE, listCalls: 4 },
    problem: 'row_count_mismatch',
    names: 'UPSTREAM_LIST_PAGE_SIZE=100',
    checkSays: 'pages of 100 rows where 200 were asked',
    fix: { UPSTREAM_LIST_PAGE_SIZE: '100' },
    // Two full pages prove paging, so the next two are asked at once: one of them past the end.
    fixedCalls: 5,
  },
  {
    upstream: 'pages by page number, not offset',
    variant: { paging: { style: 'page', param: 'page' } },
    served: { total: 200, listCalls: 2 },
    problem: 'repeated_page',
    names: 'UPSTREAM_LIST_PAGING',
    checkSays: 'paging by offset under offset does not work',
    fix: { UPSTREAM_LIST_PAGING: 'page' },
    fixedCalls: 3,
  },
] as const satisfies readonly {
  upstream: string;
  variant: UpstreamVariant;
  served: { total: number; listCalls: number };
  problem: string;
  names: string;
  checkSays: string;
  fix: Record<string, string>;
  fixedCalls: number;
}[];

describe.each(PAGING_VARIANTS)('an upstream that $upstream', ({ variant, served, problem, names, checkSays, fix, fixedCalls }) => {
  it(`serves ${served.total} issues in ${served.listCalls} calls, logs one warn line naming ${names}, and check exits 1 saying so`, async () => {
    const site = await siteOver(variant);
    expect({ status: site.status, total: site.total, listCalls: site.listCalls }).toEqual({ status: 200, ...served });
    expect(site.warnings).toEqual([expect.objectContaining({ event: 'upstream_paging', problems: problem })]);
    expect(site.warnings[0]?.set).toContain(names.split('=')[0]);
    expect(site.failures.join('\n')).toContain(checkSays);
    expect(site.failures.join('\n')).toContain(names);
  });

  it(`serves the whole archive in ${fixedCalls} calls without a warning once ${Object.keys(fix).join(', ')} says how it pages`, async () => {
    const site = await siteOver(variant, fix);
    expect([site.total, site.listCalls, site.warnings, site.failures]).toEqual([ARCHIVE_SIZE, fixedCalls, [], []]);
  });
});

describe('an upstream with one issue whose subject is null', () => {
  it('serves the other 249 issues, logs one warn line with its id, and check exits 1 counting the dropped row', async () => {
    const site = await siteOver({ nullSubjectSlug: 'issue-7-weekly-notes' });
    expect([site.status, site.total, site.listCalls]).toEqual([200, ARCHIVE_SIZE - 1, 3]);
    expect(site.warnings).toEqual([expect.objectContaining({ event: 'upstream_rows_dropped', count: 1, ids: 'iss_000007' })]);
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
    expect(site.failures).toEqual([]);
  });
});
