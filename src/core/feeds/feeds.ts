import type { IssueSummary } from '../public-shapes.js';

// Not an XML 1.0 Char (§2.2): such a character makes the document ill-formed even escaped, so it is dropped.
const FORBIDDEN_XML_CHARS = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu;
const ENTITIES: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' };

export const xmlText = (value: string) => value.replace(FORBIDDEN_XML_CHARS, '').replace(/[&<>"']/g, (char) => ENTITIES[char]!);

export const xmlElement = (name: string, text: string) => `<${name}>${xmlText(text)}</${name}>`;

/** Every URL absolute; `updated` from the data, never the clock (equal input, equal bytes). */
export interface FeedOptions {
  issueUrl: (slug: string) => string;
  feedUrl?: string;
  siteUrl: string;
  title: string;
  author?: string;
  description?: string;
  updated: string;
}

/** The later of `updatedAt` and `sentAt`: an upstream may not move `updatedAt` on sending. */
export function issueUpdatedAt(issue: Pick<IssueSummary, 'sentAt' | 'updatedAt'>): string | null {
  const known = [issue.updatedAt, issue.sentAt].map((date) => Date.parse(date ?? '')).filter((time) => !Number.isNaN(time));
  return known.length === 0 ? null : new Date(Math.max(...known)).toISOString();
}

/** With no date at all, a fixed one: the same issues, the same bytes. */
export function latestUpdate(issues: readonly IssueSummary[], fallback = '1970-01-01T00:00:00.000Z'): string {
  const dates = issues.map(issueUpdatedAt).filter((date) => date !== null);
  return dates.sort().at(-1) ?? fallback;
}

export function renderAtomFeed(issues: readonly IssueSummary[], options: FeedOptions): string {
  return [
    '<?xml version="1.0" encoding="utf-8"?>',
    '<feed xmlns="http://www.w3.org/2005/Atom">',
    `  ${xmlElement('title', options.title)}`,
    ...(options.description ? [`  ${xmlElement('subtitle', options.description)}`] : []),
    `  ${xmlElement('id', options.siteUrl)}`,
    `  <link rel="alternate" type="text/html" href="${xmlText(options.siteUrl)}"/>`,
    ...(options.feedUrl ? [`  <link rel="self" type="application/atom+xml" href="${xmlText(options.feedUrl)}"/>`] : []),
    `  ${xmlElement('updated', options.updated)}`,
    // RFC 4287 §4.1.1: a feed needs an author unless every entry has one.
    `  <author>${xmlElement('name', options.author ?? options.title)}</author>`,
    ...issues.flatMap((issue) => atomEntry(issue, options.issueUrl(issue.slug), issueUpdatedAt(issue) ?? options.updated)),
    '</feed>',
    '',
  ].join('\n');
}

// An issue without a date gets the feed's (<updated> is required, §4.1.2).
const atomEntry = (issue: IssueSummary, url: string, updated: string) => [
  '  <entry>',
  `    <title type="text">${xmlText(issue.subject)}</title>`,
  `    <link rel="alternate" type="text/html" href="${xmlText(url)}"/>`,
  `    ${xmlElement('id', url)}`,
  ...(issue.sentAt ? [`    ${xmlElement('published', issue.sentAt)}`] : []),
  `    ${xmlElement('updated', updated)}`,
  ...(issue.previewText ? [`    <summary type="text">${xmlText(issue.previewText)}</summary>`] : []),
  ...(issue.category ? [`    <category term="${xmlText(issue.category.slug)}" label="${xmlText(issue.category.name)}"/>`] : []),
  '  </entry>',
];

const rfc822 = (iso: string) => new Date(iso).toUTCString();

export function renderRssFeed(issues: readonly IssueSummary[], options: FeedOptions): string {
  return [
    '<?xml version="1.0" encoding="utf-8"?>',
    '<rss version="2.0" xmlns:atom="http://www.w3.org/2005/Atom">',
    '  <channel>',
    `    ${xmlElement('title', options.title)}`,
    `    ${xmlElement('link', options.siteUrl)}`,
    // <description> is required in a channel; the title stands in when there is no tagline.
    `    ${xmlElement('description', options.description ?? options.title)}`,
    ...(options.feedUrl ? [`    <atom:link rel="self" type="application/rss+xml" href="${xmlText(options.feedUrl)}"/>`] : []),
    `    ${xmlElement('lastBuildDate', rfc822(options.updated))}`,
    ...issues.flatMap((issue) => rssItem(issue, options.issueUrl(issue.slug))),
    '  </channel>',
    '</rss>',
    '',
  ].join('\n');
}

const rssItem = (issue: IssueSummary, url: string) => [
  '    <item>',
  `      ${xmlElement('title', issue.subject)}`,
  `      ${xmlElement('link', url)}`,
  `      <guid isPermaLink="true">${xmlText(url)}</guid>`,
  ...(issue.sentAt ? [`      ${xmlElement('pubDate', rfc822(issue.sentAt))}`] : []),
  ...(issue.previewText ? [`      ${xmlElement('description', issue.previewText)}`] : []),
  ...(issue.category ? [`      ${xmlElement('category', issue.category.name)}`] : []),
  '    </item>',
];
