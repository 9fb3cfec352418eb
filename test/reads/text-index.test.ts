import { describe, expect, it } from 'vitest';
import { archiveValue, decodeSharedEntry, encodeSharedEntry } from '../../src/core/reads/cached-value.js';
import { countWords, readingMinutesOf, searchWords, visibleText } from '../../src/core/reads/letter-text.js';
import { createPublicReads } from '../../src/core/reads/public-reads.js';
import { cachePolicies } from '../../src/core/reads/cache-policies.js';
import {
  addSummary,
  compacted,
  createTextStore,
  documentOf,
  search,
  textIndexBytes,
  worthCompacting,
  type TextIndex,
} from '../../src/core/reads/text-index.js';
import type { IssueSummary } from '../../src/core/public-shapes.js';
import type { UpstreamClient } from '../../src/core/upstream/newsletter-api.js';
import { createFakeClock } from '../helpers.js';
import { publicIssue } from './fixtures.js';

function summary(slug: string, subject: string, previewText: string | null = null): IssueSummary {
  return { slug, subject, previewText, thumbnailUrl: null, sentAt: null, updatedAt: null, category: null, readingMinutes: null };
}

describe('the words of a letter', () => {
  it('are its visible text: tags, comments, scripts, styles and the head are not words', () => {
    const html =
      '<!doctype html><html><head><title>Mail</title><style>p{color:red}</style></head><body>' +
      '<!-- tracking --><p>First&nbsp;line</p><script>var hidden = 1;</script><p>second <STRONG>line</STRONG></p>' +
      '<SCRIPT>alsoHidden()</SCRIPT><div>a &lt; b &amp; c</div></body></html>';
    expect(searchWords(visibleText(html))).toEqual(['first', 'line', 'second', 'line', 'a', 'b', 'c']);
  });

  it('keep a word whole across inline tags, and split it at block tags', () => {
    expect(searchWords(visibleText('<p>gar<b>lic</b></p><p>win</p><p>ter</p>'))).toEqual(['garlic', 'win', 'ter']);
  });

  it('fold case, accents, ligatures and a few letters, and keep an apostrophe inside a word', () => {
    expect(searchWords("Café CRÈME ﬁne Straße Œuvre naïve year’s don't")).toEqual([
      'cafe',
      'creme',
      'fine',
      'strasse',
      'oeuvre',
      'naive',
      'years',
      'dont',
    ]);
    expect(searchWords(visibleText('<p>caf&eacute; &Uuml;ber &#233;t&#xE9;</p>'))).toEqual(['cafe', 'uber', 'ete']);
  });

  it('cut a very long run to 40 characters', () => {
    expect(searchWords('x'.repeat(500))).toEqual(['x'.repeat(40)]);
  });

  it('read a broken letter to its end without failing (an unclosed tag, a stray <)', () => {
    expect(searchWords(visibleText('<p>one < two <script>never closed'))).toEqual(['one', 'two']);
    expect(searchWords(visibleText('<p>one <b'))).toEqual(['one']);
  });

  it('count about 230 a minute, rounded, at least one', () => {
    expect([0, 1, 344, 345, 690, 2300].map(readingMinutesOf)).toEqual([1, 1, 1, 2, 3, 10]);
    expect(countWords(`<p>${'word '.repeat(690)}</p>`)).toBe(690);
    expect(readingMinutesOf(countWords(`<h1>Title</h1><p>${'word '.repeat(689)}</p><script>${'x '.repeat(500)}</script>`))).toBe(3);
  });

  it('keep each word of a letter once in its document, however it was spelt, and count them all', () => {
    const store = createTextStore();
    const letter = "<p>Garlic garlic GARLIC café cafe Cafe year’s years don't <b>Café</b></p>";
    const slot = addSummary(store, summary('n', 'Notes'), null, letter);
    expect(Array.from(store.recent[slot]!, (word) => store.dictionary.wordOf(word))).toEqual(['notes', 'garlic', 'cafe', 'years', 'dont']);
    expect(store.docs[slot]!.letterWords).toBe(10);
  });

  it('take time linear in the letter, even for markup made to be slow', () => {
    const hostile = '<'.repeat(200_000) + '<a'.repeat(100_000) + '&#'.repeat(100_000) + '<script'.repeat(20_000);
    const started = performance.now();
    visibleText(hostile);
    // A bound for a hang, not a speed figure: a quadratic scan of this takes minutes.
    expect(performance.now() - started).toBeLessThan(5_000);
  });
});

describe('the text index', () => {
  function indexOf(summaries: IssueSummary[], letters: Record<string, string> = {}): TextIndex {
    const store = createTextStore();
    const slots = new Map(summaries.map((s) => [s.slug, addSummary(store, s, null, letters[s.slug])]));
    return { store, slots };
  }
  const slugsOf = (issues: IssueSummary[]) => issues.map((issue) => issue.slug);

  it('matches each query word at the start of a word, every word required, subject matches first, else in the order given', () => {
    const issues = [summary('c', 'Winter notes', 'garlic'), summary('b', 'Other'), summary('a', 'Garlic in winter')];
    const text = indexOf(issues, { b: '<p>Garlic, planted in winter.</p>' });
    const slugs = (q: string) => slugsOf(search(text, issues, searchWords(q)));
    expect(slugs('garlic winter')).toEqual(['a', 'c', 'b']);
    expect(slugs('gar')).toEqual(['a', 'c', 'b']);
    expect(slugs('planted')).toEqual(['b']);
    expect(slugs('arlic')).toEqual([]);
  });

  it('matches a query word of one or two characters only as a whole word', () => {
    const issues = [summary('a', 'A day at the allotment'), summary('b', 'Allotments at dusk'), summary('c', 'Go to the plot')];
    const text = indexOf(issues);
    expect(slugsOf(search(text, issues, ['a']))).toEqual(['a']);
    expect(slugsOf(search(text, issues, ['at']))).toEqual(['a', 'b']);
    expect(slugsOf(search(text, issues, ['all']))).toEqual(['a', 'b']);
    expect(slugsOf(search(text, issues, ['g']))).toEqual([]);
  });

  it('keeps each word of a letter once, even when the letter brings more new words than its scratch marks held', () => {
    const letter = `<p>${Array.from({ length: 3000 }, (_, i) => `word${i} word${i}`).join(' ')}</p>`;
    const text = indexOf([summary('a', 'Alpha')], { a: letter });
    // The subject's word and the letter's 3,000, each once.
    expect(text.store.recent[0]).toHaveLength(3001);
    expect(documentOf(text, 'a')?.letterWords).toBe(6000);
  });

  it('compares more than 32 words, in passes', () => {
    const words = Array.from({ length: 40 }, (_, i) => `w${i}`);
    const issues = [summary('all', words.join(' ')), summary('some', words.slice(0, 35).join(' '))];
    expect(slugsOf(search(indexOf(issues), issues, words))).toEqual(['all']);
  });

  it('finds the same issues through slots added later and after compaction, which drops the slots and words no index uses', () => {
    const issues = [summary('a', 'Alpha beta'), summary('b', 'Gamma delta')];
    const text = indexOf(issues);
    // An edit: a new document for `b`, the old one left behind in the store.
    text.slots.set('b', addSummary(text.store, summary('b', 'Gamma epsilon'), '2026-01-02'));
    expect(slugsOf(search(text, issues, ['epsilon']))).toEqual(['b']);
    expect(slugsOf(search(text, issues, ['delta']))).toEqual([]);
    expect(worthCompacting(text)).toBe(true);
    const small = compacted(text);
    expect(worthCompacting(small)).toBe(false);
    expect(small.store.docs).toHaveLength(2);
    expect(small.store.dictionary.size()).toBe(4);
    expect(textIndexBytes(small)).toBeLessThan(textIndexBytes(text));
    for (const q of ['epsilon', 'alpha', 'gam', 'delta'])
      expect(slugsOf(search(small, issues, [q]))).toEqual(slugsOf(search(text, issues, [q])));
    expect(documentOf(small, 'b')?.version).toBe('2026-01-02');
  });

  it('keeps a word list ascending across hundreds of documents and word numbers past a byte', () => {
    const issues = Array.from({ length: 600 }, (_, n) => summary(`s${n}`, `common w${n} w${n % 7}`));
    const text = compacted(indexOf(issues));
    expect(search(text, issues, ['common'])).toHaveLength(600);
    expect(slugsOf(search(text, issues, ['w599']))).toEqual(['s599']);
    const startingW30 = issues.filter((issue) => issue.subject.split(' ').some((word) => word.startsWith('w30')));
    expect(slugsOf(search(text, issues, ['w30', 'common']))).toEqual(slugsOf(startingW30));
    expect(startingW30.map((issue) => issue.slug)).toEqual(['s30', ...Array.from({ length: 10 }, (_, i) => `s30${i}`)]);
  });

  it('crosses the shared tier with its letters, so an instance taking the archive from it searches them too', () => {
    const issues = [summary('a', 'Alpha'), summary('b', 'Beta')];
    const text = indexOf(issues, { b: `<p>${'zucchini '.repeat(3)} ${'x'.repeat(30)} 漢字 ✓ 🌱 émigré</p>` });
    const decoded = decodeSharedEntry(encodeSharedEntry(archiveValue(issues, 1_700_000_000_000, true, { text })));
    if (decoded?.kind !== 'archive' || !decoded.index.text) throw new Error('expected an archive with its text index');
    for (const q of ['zucchini', 'emigre', '漢字', 'xxxx'])
      expect(slugsOf(search(decoded.index.text, issues, searchWords(q)))).toEqual(['b']);
    expect(slugsOf(search(decoded.index.text, issues, ['beta']))).toEqual(['b']);
    expect(documentOf(decoded.index.text, 'b')?.letterWords).toBe(documentOf(text, 'b')?.letterWords);
  });

  it('decodes a damaged text index as a miss, not as wrong answers', () => {
    const issues = [summary('a', 'Alpha')];
    const entry = encodeSharedEntry(archiveValue(issues, 1_700_000_000_000, true, { text: indexOf(issues) }));
    for (const damage of [
      (t: { words: string }) => (t.words = ''),
      (t: { postings: string }) => (t.postings = 'AAAA'),
      (t: { offsets: string }) => (t.offsets = '!'),
    ]) {
      const payload = JSON.parse(entry.payload) as { text: { words: string; postings: string; offsets: string } };
      damage(payload.text);
      expect(decodeSharedEntry({ ...entry, payload: JSON.stringify(payload) })).toBeUndefined();
    }
  });
});

describe('letters the list rows do not carry', () => {
  /** Public reads over rows without their letter; by slug, each issue comes with it. */
  function leanReads() {
    const clock = createFakeClock();
    const calls: string[] = [];
    const letters: Record<string, string> = { 'first-light': `<p>${'sorrel '.repeat(700)}</p>`, 'second-wind': '<p>Borage and bees.</p>' };
    const upstream: UpstreamClient = {
      listAllPublicIssues: async () => {
        calls.push('archive');
        return Object.keys(letters).map((slug, day) =>
          publicIssue(slug, { contentHtml: null, updatedAt: '2026-01-05T00:00:00.000Z', sentAt: `2026-01-0${day + 1}T00:00:00.000Z` }),
        );
      },
      getIssueBySlug: async (slug) => {
        calls.push(slug);
        return publicIssue(slug, {
          contentHtml: letters[slug],
          updatedAt: '2026-01-05T00:00:00.000Z',
          sentAt: slug === 'first-light' ? '2026-01-01T00:00:00.000Z' : '2026-01-02T00:00:00.000Z',
        });
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
      archiveMaxIssues: 5000,
    });
    const page = async (q?: string) =>
      JSON.parse((await reads.archivePage({ limit: 20, offset: 0, q })).rendered.body) as { data: IssueSummary[] };
    return { reads, calls, clock, page };
  }

  it('leave a summary without reading time, and its letter out of search, until the service reads the letter by slug', async () => {
    const { reads, page, calls, clock } = leanReads();
    expect((await page()).data.map((issue) => issue.readingMinutes)).toEqual([null, null]);
    expect((await page('sorrel')).data).toEqual([]);
    const detail = JSON.parse((await reads.issue('first-light')).rendered.body) as {
      data: { readingMinutes: number; newer: { slug: string } | null };
    };
    expect(detail.data.readingMinutes).toBe(3);
    expect(detail.data.newer?.slug).toBe('second-wind');
    // Its words join the index that lists the same `updatedAt` at once…
    expect((await page('sorrel')).data.map((issue) => issue.slug)).toEqual(['first-light']);
    // …and the next index keeps them, with the reading time in the summary.
    clock.advance(601_000);
    await reads.archivePage({ limit: 20, offset: 0 });
    for (let turn = 0; turn < 50 && (await reads.archivePage({ limit: 20, offset: 0 })).state !== 'HIT'; turn += 1)
      await new Promise((resolve) => setTimeout(resolve, 0));
    expect(calls.filter((call) => call === 'archive')).toHaveLength(2);
    expect((await page()).data.map((issue) => [issue.slug, issue.readingMinutes])).toEqual([
      ['second-wind', null],
      ['first-light', 3],
    ]);
    expect((await page('sorrel')).data.map((issue) => issue.slug)).toEqual(['first-light']);
  });
});
