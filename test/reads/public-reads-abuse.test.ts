import { describe, expect, it } from 'vitest';
import { createReadBudget } from '../../src/core/reads/read-budget.js';
import { cachePolicies } from '../../src/core/reads/cache-policies.js';
import { createPublicReads } from '../../src/core/reads/public-reads.js';
import type { UpstreamClient } from '../../src/core/upstream/newsletter-api.js';
import { UpstreamError } from '../../src/core/upstream/transport.js';
import { createFakeClock } from '../helpers.js';
import { publicIssue as issue } from './fixtures.js';

const VISITOR = '198.51.100.7';
const visitor = { waitUntil: () => undefined, client: () => VISITOR };

/** Public reads over an upstream double that publishes `slugs` and counts every call. */
function setup(options: { slugs?: string[]; archiveMaxIssues?: number; perClientPerMinute?: number; leanRows?: boolean } = {}) {
  const clock = createFakeClock();
  const published = [...(options.slugs ?? ['first-light', 'second-wind'])];
  const calls: string[] = [];
  const upstream: UpstreamClient = {
    listAllPublicIssues: async (max) => {
      calls.push('archive');
      return published.slice(0, max).map((slug) => issue(slug, options.leanRows ? { contentHtml: null } : {}));
    },
    getIssueBySlug: async (slug) => {
      calls.push(slug);
      if (published.includes(slug)) return issue(slug);
      throw new UpstreamError('not_found', 'upstream answered not found (404)', { status: 404 });
    },
    listCategories: async () => [],
    createSubscriber: async () => ({}),
  };
  const reads = createPublicReads({
    upstream,
    now: clock.now,
    policies: cachePolicies({ cacheTtlSeconds: 60, categoriesTtlSeconds: 60 }),
    maxBytes: 4 * 1024 * 1024,
    notFoundTtlSeconds: 30,
    archiveResyncSeconds: 600,
    indexRefreshMinIntervalMs: 5_000,
    archiveMaxIssues: options.archiveMaxIssues ?? 5000,
    readBudget: createReadBudget({ totalPerMinute: 1000, perClientPerMinute: options.perClientPerMinute ?? 1000, now: clock.now }),
  });
  const issueStatus = (slug: string) =>
    Promise.resolve(reads.issue(slug, undefined, visitor)).then(
      () => 200,
      // Our 404 is an ApiError (a code); a refused upstream read an UpstreamError (a kind).
      (error: { code?: string; kind?: string }) => error.code ?? error.kind,
    );
  return { reads, calls, clock, publish: (slug: string) => published.push(slug), issueStatus };
}

describe('public reads under a slug scan', () => {
  it('answer an unknown slug 404 from a complete, fresh index, with no upstream call', async () => {
    const { reads, calls, issueStatus } = setup();
    await reads.archivePage({ limit: 20, offset: 0 });
    const statuses = await Promise.all(Array.from({ length: 400 }, (_, i) => issueStatus(`scan-${i}`)));
    expect(new Set(statuses)).toEqual(new Set(['NOT_FOUND']));
    expect(calls).toEqual(['archive']);
  });

  it('open a listed issue from the letter its list row carried, with no second call', async () => {
    const { reads, calls, issueStatus } = setup();
    await reads.archivePage({ limit: 20, offset: 0 });
    expect(await issueStatus('second-wind')).toBe(200);
    expect(calls).toEqual(['archive']);
  });

  it('read a listed issue by slug, for its HTML, where list rows carry none', async () => {
    const { reads, calls, issueStatus } = setup({ leanRows: true });
    await reads.archivePage({ limit: 20, offset: 0 });
    expect(await issueStatus('second-wind')).toBe(200);
    expect(calls).toEqual(['archive', 'second-wind']);
  });

  it('find an issue published after the index with one shared refresh, once the interval has passed', async () => {
    const { reads, calls, clock, publish, issueStatus } = setup();
    await reads.archivePage({ limit: 20, offset: 0 });
    publish('fresh-off-the-press');
    expect(await issueStatus('fresh-off-the-press')).toBe('NOT_FOUND');
    clock.advance(5_000);
    const statuses = await Promise.all([issueStatus('fresh-off-the-press'), issueStatus('fresh-off-the-press'), issueStatus('nope')]);
    expect(statuses).toEqual([200, 200, 'NOT_FOUND']);
    // The refreshed index brought the new letter along.
    expect(calls).toEqual(['archive', 'archive']);
  });

  it('read by slug, within the budget, where the index is cut off at ARCHIVE_MAX_ISSUES', async () => {
    const { reads, calls, issueStatus } = setup({ slugs: ['one', 'two', 'three'], archiveMaxIssues: 2, perClientPerMinute: 32 });
    await reads.archivePage({ limit: 20, offset: 0 });
    expect(await issueStatus('three')).toBe(200);
    const statuses = await Promise.all(Array.from({ length: 10 }, (_, i) => issueStatus(`scan-${i}`)));
    // The visitor's burst is 8 (a quarter of 32): one went to `three`, seven to the scan.
    expect(statuses.filter((status) => status === 'NOT_FOUND')).toHaveLength(7);
    expect(statuses.filter((status) => status === 'rate_limited')).toHaveLength(3);
    expect(calls).toHaveLength(1 + 1 + 7);
  });

  it('serve the stale copy when the budget is spent, and a 503 with Retry-After where there is none', async () => {
    // An index cut off at one issue settles no other slug: each is read by slug, within the budget.
    const { reads, clock, issueStatus } = setup({
      slugs: ['first-light', 'second-wind', 'third-eye'],
      archiveMaxIssues: 1,
      perClientPerMinute: 4,
    });
    expect(await issueStatus('second-wind')).toBe(200);
    clock.advance(61_000);
    for (let i = 0; i < 3; i += 1) await issueStatus(`unknown-${i}`);
    const stale = await reads.issue('second-wind', undefined, visitor);
    expect(stale.state).toBe('STALE');
    const refused = await Promise.resolve(reads.issue('third-eye', undefined, visitor)).catch((error: UpstreamError) => error);
    expect(refused).toMatchObject({ kind: 'rate_limited', retryAfterSeconds: expect.any(Number) });
  });
});
