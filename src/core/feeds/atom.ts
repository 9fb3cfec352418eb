import type { IssueSummary } from '../public-shapes.js';
import { issueUpdatedAt, type FeedOptions } from './options.js';
import { xmlElement, xmlText } from './xml.js';

/** An Atom 1.0 document (RFC 4287) of the issues, in the order given: the same input gives the same bytes. */
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
    ...issues.flatMap((issue) => entry(issue, options.issueUrl(issue.slug), issueUpdatedAt(issue) ?? options.updated)),
    '</feed>',
    '',
  ].join('\n');
}

// The page URL is the id: stable as long as the slug is. An issue without a date gets the feed's (<updated> is required, §4.1.2).
const entry = (issue: IssueSummary, url: string, updated: string) => [
  '  <entry>',
  `    ${xmlElement('title', issue.subject, { type: 'text' })}`,
  `    <link rel="alternate" type="text/html" href="${xmlText(url)}"/>`,
  `    ${xmlElement('id', url)}`,
  ...(issue.sentAt ? [`    ${xmlElement('published', issue.sentAt)}`] : []),
  `    ${xmlElement('updated', updated)}`,
  ...(issue.previewText ? [`    ${xmlElement('summary', issue.previewText, { type: 'text' })}`] : []),
  ...(issue.category ? [`    <category term="${xmlText(issue.category.slug)}" label="${xmlText(issue.category.name)}"/>`] : []),
  '  </entry>',
];
