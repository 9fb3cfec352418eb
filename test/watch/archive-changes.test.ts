import { describe, expect, it } from 'vitest';
import { archiveValue, type ArchiveIndex } from '../../src/core/reads/cached-value.js';
import type { IssueSummary } from '../../src/core/public-shapes.js';
import {
  changesBetween,
  createDeployHook,
  describeHookUrl,
  MAX_NAMED_CHANGES,
  mergeChanges,
  snapshotOf,
} from '../../src/core/watch/archive-watch.js';

const summary = (slug: string, subject = `About ${slug}`): IssueSummary => ({
  slug,
  subject,
  previewText: null,
  thumbnailUrl: null,
  sentAt: '2026-01-01T09:00:00.000Z',
  updatedAt: null,
  category: null,
  readingMinutes: null,
});

/** An index of `rows` ([slug, updatedAt, subject?]) as the archive read makes it. */
function indexOf(rows: [string, string | null, string?][]): ArchiveIndex {
  const sources = new Map(rows.map(([slug, updatedAt]) => [slug, { id: `id-${slug}`, updatedAt }]));
  const value = archiveValue(
    rows.map(([slug, , subject]) => summary(slug, subject)),
    0,
    true,
    { sources },
  );
  if (value.kind !== 'archive') throw new Error('not an index');
  return value.index;
}

describe('what changed between two looks at the archive', () => {
  it('names new, edited (a moved updatedAt) and unpublished issues, and nothing else', () => {
    const before = snapshotOf(
      indexOf([
        ['a', 't1'],
        ['b', 't1'],
        ['c', 't1'],
      ]),
    );
    const after = snapshotOf(
      indexOf([
        ['d', 't2'],
        ['a', 't1'],
        ['b', 't2'],
      ]),
    );
    expect(changesBetween(before, after)).toEqual([
      { slug: 'd', kind: 'new' },
      { slug: 'b', kind: 'edited' },
      { slug: 'c', kind: 'unpublished' },
    ]);
    expect(changesBetween(after, after)).toEqual([]);
  });

  it('sees an edit from an upstream that gives no updatedAt, by what the archive shows', () => {
    const before = snapshotOf(indexOf([['a', null, 'Old subject']]));
    const after = snapshotOf(indexOf([['a', null, 'New subject']]));
    expect(changesBetween(before, after)).toEqual([{ slug: 'a', kind: 'edited' }]);
  });

  it('merges later changes into those not yet announced, one entry per slug', () => {
    expect(
      mergeChanges(
        [
          { slug: 'new-then-edited', kind: 'new' },
          { slug: 'new-then-gone', kind: 'new' },
          { slug: 'gone-then-back', kind: 'unpublished' },
          { slug: 'edited-then-gone', kind: 'edited' },
        ],
        [
          { slug: 'new-then-edited', kind: 'edited' },
          { slug: 'new-then-gone', kind: 'unpublished' },
          { slug: 'gone-then-back', kind: 'new' },
          { slug: 'edited-then-gone', kind: 'unpublished' },
          { slug: 'later', kind: 'new' },
        ],
      ),
    ).toEqual([
      { slug: 'new-then-edited', kind: 'new' },
      { slug: 'gone-then-back', kind: 'edited' },
      { slug: 'edited-then-gone', kind: 'unpublished' },
      { slug: 'later', kind: 'new' },
    ]);
  });
});

describe('the build hook call', () => {
  it('names at most MAX_NAMED_CHANGES changes, counting the rest, so the body stays small', async () => {
    const changes = Array.from({ length: MAX_NAMED_CHANGES + 20 }, (_, index) => ({ slug: `issue-${index}`, kind: 'edited' as const }));
    const sent: string[] = [];
    const fetch = async (_url: unknown, init?: RequestInit) => {
      sent.push(String(init?.body));
      return new Response(null, { status: 204 });
    };
    await expect(createDeployHook({ url: 'https://hooks.example/build/token', fetch })(changes)).resolves.toEqual({
      ok: true,
      status: 204,
    });
    const body = JSON.parse(sent[0]!);
    expect(body.changes).toHaveLength(MAX_NAMED_CHANGES);
    expect(body).toMatchObject({ event: 'archive_changed', counts: { new: 0, edited: MAX_NAMED_CHANGES + 20, unpublished: 0 }, more: 20 });
  });

  it('shows only the origin of a hook URL, whose path or query is its token', () => {
    expect(describeHookUrl('https://api.netlify.com/build_hooks/5f1e0000secret')).toBe('https://api.netlify.com');
    expect(describeHookUrl('https://api.vercel.com/v1/integrations/deploy/prj_x/secret?buildCache=false')).toBe('https://api.vercel.com');
  });
});
