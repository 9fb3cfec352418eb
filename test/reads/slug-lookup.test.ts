import { describe, expect, it } from 'vitest';
import { archiveValue, type ArchiveIndex, type IndexCopy } from '../../src/core/reads/cached-value.js';
import { createSlugLookup } from '../../src/core/reads/public-reads.js';
import type { IssueSummary } from '../../src/core/public-shapes.js';
import { createFakeClock } from '../helpers.js';

const summary = (slug: string): IssueSummary => ({
  slug,
  subject: slug,
  previewText: null,
  thumbnailUrl: null,
  sentAt: null,
  updatedAt: null,
  category: null,
  readingMinutes: null,
});

function copyOf(slugs: string[], fetchedAt: number, complete = true): IndexCopy {
  const value = archiveValue(slugs.map(summary), fetchedAt, complete);
  return { index: (value as { index: ArchiveIndex }).index, fetchedAt };
}

function setup(initial: string[], options: { complete?: boolean } = {}) {
  const clock = createFakeClock();
  let upstreamSlugs = [...initial];
  let kept: IndexCopy | undefined = copyOf(initial, clock.now(), options.complete);
  let refreshes = 0;
  let failing = false;
  const lookUp = createSlugLookup<undefined>({
    read: async () => kept,
    refresh: async () => {
      refreshes += 1;
      if (failing) return undefined;
      kept = copyOf(upstreamSlugs, clock.now(), options.complete);
      return kept;
    },
    now: clock.now,
    minRefreshIntervalMs: 5_000,
  });
  return {
    clock,
    lookUp: (slug: string) => lookUp(slug, undefined),
    publish: (slug: string) => (upstreamSlugs = [...upstreamSlugs, slug]),
    refreshes: () => refreshes,
    fail: () => (failing = true),
    drop: () => (kept = undefined),
  };
}

describe('looking a slug up in the archive index', () => {
  it('finds a listed slug, and calls a slug absent from a just-read complete index absent without a refresh', async () => {
    const { lookUp, refreshes } = setup(['first-light']);
    expect(await lookUp('first-light')).toBe('listed');
    expect(await lookUp('no-such-issue')).toBe('absent');
    expect(refreshes()).toBe(0);
  });

  it('refreshes an index older than the interval once for a missing slug, and finds an issue published since', async () => {
    const { lookUp, clock, publish, refreshes } = setup(['first-light']);
    clock.advance(5_000);
    publish('new-issue');
    expect(await lookUp('new-issue')).toBe('listed');
    expect(refreshes()).toBe(1);
  });

  it('shares one refresh among concurrent lookups, and makes none more within the interval', async () => {
    const { lookUp, clock, refreshes } = setup(['first-light']);
    clock.advance(10_000);
    const verdicts = await Promise.all(Array.from({ length: 400 }, (_, i) => lookUp(`scan-${i}`)));
    expect(new Set(verdicts)).toEqual(new Set(['absent']));
    expect(refreshes()).toBe(1);
    clock.advance(4_999);
    await lookUp('scan-again');
    expect(refreshes()).toBe(1);
    clock.advance(1);
    await lookUp('scan-again');
    expect(refreshes()).toBe(2);
  });

  it('cannot settle a slug from an index cut off at the cap, or without an index', async () => {
    const capped = setup(['first-light'], { complete: false });
    expect(await capped.lookUp('other')).toBe('unknown');
    const none = setup(['first-light']);
    none.drop();
    expect(await none.lookUp('first-light')).toBe('unknown');
  });

  it('leaves a missing slug to the upstream when the refresh fails', async () => {
    const { lookUp, clock, fail } = setup(['first-light']);
    clock.advance(5_000);
    fail();
    expect(await lookUp('maybe-new')).toBe('unknown');
  });
});
