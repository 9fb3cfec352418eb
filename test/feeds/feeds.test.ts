import { parseFeed } from '@rowanmanning/feed-parser';
import { XMLValidator } from 'fast-xml-parser';
import { describe, expect, it } from 'vitest';
import { renderAtomFeed, issueUpdatedAt, latestUpdate, type FeedOptions, renderRssFeed } from '../../src/core/feeds/feeds.js';
import type { IssueSummary } from '../../src/core/public-shapes.js';

/*
 * Read back with @rowanmanning/feed-parser: typed, tested against a corpus of real-world feeds,
 * one synchronous parser for both RSS and Atom, on two small dependencies (fast-xml-parser,
 * html-entities), and it keeps up with current Node releases. (rss-parser sits on xml2js and
 * releases rarely; feedparser is a stream API on a pinned sax.) It is lenient on purpose, so
 * well-formedness is checked separately, with fast-xml-parser's validator.
 */
const OPTIONS: FeedOptions = {
  issueUrl: (slug) => `https://news.example.com/issues/${slug}/`,
  feedUrl: 'https://news.example.com/feed.xml',
  siteUrl: 'https://news.example.com/',
  title: 'The Field Notes',
  description: 'A weekly letter.',
  updated: '2026-11-15T09:00:00.000Z',
};

function issue(n: number, overrides: Partial<IssueSummary> = {}): IssueSummary {
  return {
    slug: `issue-${n}`,
    subject: `Issue number ${n}`,
    previewText: `Preview of issue ${n}.`,
    thumbnailUrl: null,
    sentAt: new Date(Date.UTC(2026, 10, 15 - n, 9)).toISOString(),
    updatedAt: null,
    category: { name: 'Guides & Tools', slug: 'guides' },
    readingMinutes: null,
    ...overrides,
  };
}

// Every kind of text that could break a document: markup, entities, CDATA's end, and characters XML 1.0 forbids.
const HOSTILE = 'A <b>bold</b> & "quoted" \'subject\' ]]> with <![CDATA[x]]> \u0000\u0001\u0008\u000B\u001F\uFFFE\uD800 end';
const HOSTILE_CLEAN = 'A <b>bold</b> & "quoted" \'subject\' ]]> with <![CDATA[x]]>  end';

const RENDERERS = [
  { name: 'Atom', render: renderAtomFeed },
  { name: 'RSS', render: renderRssFeed },
] as const;

/** Well-formed XML 1.0 (fast-xml-parser's validator) with no character XML forbids, even escaped. */
function expectWellFormed(xml: string) {
  expect(XMLValidator.validate(xml)).toBe(true);
  expect(xml).not.toMatch(/[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|&#x?0*[0-8bcef]?;/i);
  expect(xml).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/);
}

describe.each(RENDERERS)('the $name feed', ({ name, render }) => {
  it('is parsed by a real feed parser with every entry: title, link, id, date, summary and category', () => {
    const issues = [issue(1), issue(2, { category: null, previewText: null })];
    const xml = render(issues, OPTIONS);
    expectWellFormed(xml);
    const feed = parseFeed(xml);
    expect(feed.meta.type).toBe(name === 'Atom' ? 'atom' : 'rss');
    expect(feed.title).toBe('The Field Notes');
    expect(feed.url).toBe('https://news.example.com/');
    expect(feed.self).toBe('https://news.example.com/feed.xml');
    expect(feed.updated?.toISOString()).toBe('2026-11-15T09:00:00.000Z');
    expect(feed.items).toHaveLength(2);
    const [first, second] = feed.items;
    expect(first!.title).toBe('Issue number 1');
    expect(first!.url).toBe('https://news.example.com/issues/issue-1/');
    expect(first!.id).toBe('https://news.example.com/issues/issue-1/');
    expect(first!.published?.toISOString()).toBe('2026-11-14T09:00:00.000Z');
    expect(first!.description).toBe('Preview of issue 1.');
    expect(first!.categories.map((c) => c.label ?? c.term)).toEqual(['Guides & Tools']);
    expect(second!.title).toBe('Issue number 2');
    expect(second!.description).toBeNull();
    expect(second!.categories).toEqual([]);
  });

  it('keeps a hostile subject, summary and category as text, dropping only the characters XML forbids', () => {
    const hostile = issue(1, { subject: HOSTILE, previewText: HOSTILE, category: { name: HOSTILE, slug: 'x' } });
    const xml = render([hostile], { ...OPTIONS, title: HOSTILE });
    expectWellFormed(xml);
    expect(xml).not.toContain('<b>');
    expect(xml).not.toContain(']]>');
    const feed = parseFeed(xml);
    expect(feed.title).toBe(HOSTILE_CLEAN);
    expect(feed.items).toHaveLength(1);
    expect(feed.items[0]!.title).toBe(HOSTILE_CLEAN);
    expect(feed.items[0]!.categories.map((c) => c.label ?? c.term)).toEqual([HOSTILE_CLEAN]);
  });

  it('escapes an ampersand in an issue URL', () => {
    const xml = render([issue(1)], { ...OPTIONS, issueUrl: (slug) => `https://news.example.com/?issue=${slug}&ref=feed` });
    expectWellFormed(xml);
    expect(parseFeed(xml).items[0]!.url).toBe('https://news.example.com/?issue=issue-1&ref=feed');
  });

  it('lists an issue without a send date, dated by the feed', () => {
    const xml = render([issue(1, { sentAt: null })], OPTIONS);
    expectWellFormed(xml);
    expect(parseFeed(xml).items).toHaveLength(1);
  });

  it('is deterministic: the same issues give the same bytes', () => {
    const issues = Array.from({ length: 20 }, (_, n) => issue(n));
    expect(render(issues, OPTIONS)).toBe(render(structuredClone(issues), { ...OPTIONS }));
  });

  it('has no self link when the caller does not know its address, and names its author apart from its title', () => {
    const { feedUrl: _unknown, ...withoutAddress } = OPTIONS;
    const xml = render([issue(1)], { ...withoutAddress, title: 'The Field Notes: Guides', author: 'The Field Notes' });
    expectWellFormed(xml);
    expect(xml).not.toContain('rel="self"');
    const feed = parseFeed(xml);
    expect(feed.self).toBeNull();
    expect(feed.title).toBe('The Field Notes: Guides');
    if (name === 'Atom') expect(feed.authors.map((author) => author.name)).toEqual(['The Field Notes']);
  });

  it('is well-formed with no issues at all', () => {
    const xml = render([], OPTIONS);
    expectWellFormed(xml);
    expect(parseFeed(xml).items).toEqual([]);
  });
});

describe('latestUpdate', () => {
  it('is the newest send date, or the fallback when no issue has one', () => {
    expect(latestUpdate([issue(3), issue(1), issue(2)], 'x')).toBe('2026-11-14T09:00:00.000Z');
    expect(latestUpdate([issue(1, { sentAt: null })], '2020-01-01T00:00:00.000Z')).toBe('2020-01-01T00:00:00.000Z');
  });

  it('counts an edit: an issue updated after it was sent dates the list by its updatedAt', () => {
    const edited = issue(3, { updatedAt: '2026-11-20T10:00:00.000Z' });
    expect(latestUpdate([issue(1), issue(2), edited], 'x')).toBe('2026-11-20T10:00:00.000Z');
    expect(issueUpdatedAt(edited)).toBe('2026-11-20T10:00:00.000Z');
    // An updatedAt before the send (an upstream that does not move it on sending): the send date.
    expect(issueUpdatedAt(issue(1, { updatedAt: '2020-01-01T00:00:00.000Z' }))).toBe(issue(1).sentAt);
    expect(issueUpdatedAt(issue(1, { sentAt: null, updatedAt: null }))).toBeNull();
  });
});

describe('an Atom entry of an edited issue', () => {
  it('is published at its send date and updated at its edit', () => {
    const xml = renderAtomFeed([issue(1, { updatedAt: '2026-11-20T10:00:00.000Z' })], OPTIONS);
    expect(xml).toContain('<published>2026-11-14T09:00:00.000Z</published>');
    expect(xml).toContain('<updated>2026-11-20T10:00:00.000Z</updated>');
  });
});
