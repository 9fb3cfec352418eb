import { describe, expect, it } from 'vitest';
import { archiveValue, decodeSharedEntry, encodeSharedEntry, jsonValue } from '../../src/core/reads/cached-value.js';
import type { IssueSummary } from '../../src/core/public-shapes.js';
import { renderedWithEtag } from '../../src/core/reads/rendered-json.js';

const FETCHED_AT = 1_700_000_000_000;

function summary(slug: string, category: string | null = null): IssueSummary {
  return {
    slug,
    subject: `Subject of ${slug}`,
    previewText: null,
    thumbnailUrl: 'https://images.example/a.png',
    sentAt: '2026-01-01T00:00:00.000Z',
    updatedAt: '2026-01-02T00:00:00.000Z',
    category: category ? { name: category, slug: category.toLowerCase() } : null,
    readingMinutes: 3,
  };
}

describe('shared entries of cached values', () => {
  it('carry the archive across the tier and rebuild its index by category', () => {
    const all = [summary('first', 'News'), summary('second'), summary('third', 'News')];
    const entry = encodeSharedEntry(archiveValue(all, FETCHED_AT));
    expect(entry.fetchedAt).toBe(FETCHED_AT);
    const decoded = decodeSharedEntry(entry);
    const fresh = archiveValue(all, FETCHED_AT);
    if (decoded?.kind !== 'archive' || fresh.kind !== 'archive') throw new Error('expected an archive');
    // The text index holds closures: compared by what it encodes to.
    expect({ ...decoded, index: { ...decoded.index, text: undefined } }).toEqual({ ...fresh, index: { ...fresh.index, text: undefined } });
    expect(encodeSharedEntry(decoded)).toEqual(entry);
    expect(decoded.index.byCategory.get('news')?.map((issue) => issue.slug)).toEqual(['first', 'third']);
  });

  it('carry a rendered body with its ETag unchanged', () => {
    const value = jsonValue(renderedWithEtag('{"ok":true,"data":[]}', '"abc"'), FETCHED_AT);
    expect(decodeSharedEntry(encodeSharedEntry(value))).toEqual(value);
  });

  it('keep only the public fields of a summary, whatever else an entry holds', () => {
    const payload = JSON.stringify({ kind: 'archive', all: [{ ...summary('first'), audience: 'internal' }] });
    const decoded = decodeSharedEntry({ payload, fetchedAt: FETCHED_AT });
    if (decoded?.kind !== 'archive') throw new Error('expected an archive');
    expect(decoded.index.all).toEqual([summary('first')]);
  });

  it.each([
    ['is not JSON', 'not json'],
    ['is cut short', JSON.stringify({ kind: 'json', body: '{}', etag: '"a"' }).slice(0, 20)],
    ['is JSON null', 'null'],
    ['has an unknown kind', JSON.stringify({ kind: 'page', body: '{}', etag: '"a"' })],
    ['has a body that is not a string', JSON.stringify({ kind: 'json', body: { ok: true }, etag: '"a"' })],
    ['has no ETag', JSON.stringify({ kind: 'json', body: '{}' })],
    ['has an archive that is not a list', JSON.stringify({ kind: 'archive', all: {} })],
    ['has a summary without a subject', JSON.stringify({ kind: 'archive', all: [{ ...summary('a'), subject: undefined }] })],
    [
      'has a summary whose category has no slug',
      JSON.stringify({ kind: 'archive', all: [{ ...summary('a'), category: { name: 'News' } }] }),
    ],
  ])('decode to nothing (a miss) when the payload %s', (_label, payload) => {
    expect(decodeSharedEntry({ payload, fetchedAt: FETCHED_AT })).toBeUndefined();
  });
});
