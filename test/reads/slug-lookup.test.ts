import { describe, expect, it } from 'vitest';
import { cachePolicies } from '../../src/core/reads/cache-policies.js';
import { createPublicReads } from '../../src/core/reads/public-reads.js';
import type { UpstreamClient } from '../../src/core/upstream/newsletter-api.js';
import { UpstreamError } from '../../src/core/upstream/transport.js';
import { createFakeClock } from '../helpers.js';
import { publicIssue } from './fixtures.js';

/** Public reads over an upstream double; `calls` names each read: 'archive' for the index, else the slug read by slug. */
function setup(initial: string[], options: { complete?: boolean } = {}) {
  const clock = createFakeClock();
  const published = [...initial];
  const calls: string[] = [];
  let failing = false;
  const upstream: UpstreamClient = {
    listAllPublicIssues: async (max) => {
      calls.push('archive');
      if (failing) throw new UpstreamError('unavailable', 'upstream answered 503', { status: 503 });
      return published.slice(0, max).map((slug) => publicIssue(slug));
    },
    getIssueBySlug: async (slug) => {
      calls.push(slug);
      if (published.includes(slug)) return publicIssue(slug);
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
    // An index cut off at the cap is incomplete.
    archiveMaxIssues: options.complete === false ? initial.length : 5000,
  });
  const lookUp = (slug: string) =>
    Promise.resolve(reads.issue(slug)).then(
      () => 200,
      (error: { code?: string }) => error.code,
    );
  return {
    reads,
    clock,
    calls,
    lookUp,
    keepIndex: () => reads.archivePage({ limit: 20, offset: 0 }),
    publish: (slug: string) => published.push(slug),
    refreshes: () => calls.filter((call) => call === 'archive').length - 1,
    fail: () => (failing = true),
  };
}

describe('looking a slug up in the archive index', () => {
  it('finds a listed slug, and calls a slug absent from a just-read complete index absent without a refresh', async () => {
    const { lookUp, keepIndex, calls } = setup(['first-light']);
    await keepIndex();
    expect(await lookUp('first-light')).toBe(200);
    expect(await lookUp('no-such-issue')).toBe('NOT_FOUND');
    expect(calls).toEqual(['archive']);
  });

  it('refreshes an index older than the interval once for a missing slug, and finds an issue published since', async () => {
    const { lookUp, keepIndex, clock, publish, calls } = setup(['first-light']);
    await keepIndex();
    clock.advance(5_000);
    publish('new-issue');
    expect(await lookUp('new-issue')).toBe(200);
    expect(calls).toEqual(['archive', 'archive']);
  });

  it('shares one refresh among concurrent lookups, and makes none more within the interval', async () => {
    const { lookUp, keepIndex, clock, refreshes, calls } = setup(['first-light']);
    await keepIndex();
    clock.advance(10_000);
    const verdicts = await Promise.all(Array.from({ length: 400 }, (_, i) => lookUp(`scan-${i}`)));
    expect(new Set(verdicts)).toEqual(new Set(['NOT_FOUND']));
    expect(refreshes()).toBe(1);
    clock.advance(4_999);
    await lookUp('scan-again');
    expect(refreshes()).toBe(1);
    clock.advance(1);
    await lookUp('scan-again-later');
    expect(refreshes()).toBe(2);
    expect(calls.filter((call) => call !== 'archive')).toEqual([]);
  });

  it('cannot settle a slug from an index cut off at the cap, or without an index, so reads it by slug', async () => {
    const capped = setup(['first-light'], { complete: false });
    await capped.keepIndex();
    expect(await capped.lookUp('other')).toBe('NOT_FOUND');
    expect(capped.calls).toEqual(['archive', 'other']);
    const none = setup(['first-light']);
    expect(await none.lookUp('first-light')).toBe(200);
    // Read by slug first: the index is loaded only afterwards, for the issue's neighbours.
    expect(none.calls).toEqual(['first-light', 'archive']);
  });

  it('refuses a slug that fails the pattern before the index, the cache or the upstream, and answers a known one again', async () => {
    const { reads, lookUp, calls } = setup(['first-light']);
    for (const slug of ['a.b', '../first-light', 'first-light%2F', '-first-light', 'x'.repeat(201), ''])
      expect(() => reads.issue(slug)).toThrow(expect.objectContaining({ code: 'VALIDATION_ERROR' }));
    expect(calls).toEqual([]);
    expect(await lookUp('first-light')).toBe(200);
    expect(await lookUp('first-light')).toBe(200);
    expect(() => reads.issue('first-light.')).toThrow(expect.objectContaining({ code: 'VALIDATION_ERROR' }));
    expect(calls).toEqual(['first-light', 'archive']);
  });

  it('leaves a missing slug to the upstream when the refresh fails', async () => {
    const { lookUp, keepIndex, clock, fail, calls } = setup(['first-light']);
    await keepIndex();
    clock.advance(5_000);
    fail();
    expect(await lookUp('maybe-new')).toBe('NOT_FOUND');
    expect(calls).toEqual(['archive', 'archive', 'maybe-new']);
  });
});
