import type { IssueSummary } from '../public-shapes.js';
import type { FeedOptions } from './options.js';
import { xmlElement, xmlText } from './xml.js';

/** RFC 822 with four-digit years (RFC 1123): what `toUTCString` writes. */
const rfc822 = (iso: string) => new Date(iso).toUTCString();

/** An RSS 2.0 document, with an Atom `self` link (the RSS Advisory Board's best practice). */
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
    ...issues.flatMap((issue) => item(issue, options.issueUrl(issue.slug))),
    '  </channel>',
    '</rss>',
    '',
  ].join('\n');
}

const item = (issue: IssueSummary, url: string) => [
  '    <item>',
  `      ${xmlElement('title', issue.subject)}`,
  `      ${xmlElement('link', url)}`,
  `      ${xmlElement('guid', url, { isPermaLink: 'true' })}`,
  ...(issue.sentAt ? [`      ${xmlElement('pubDate', rfc822(issue.sentAt))}`] : []),
  ...(issue.previewText ? [`      ${xmlElement('description', issue.previewText)}`] : []),
  ...(issue.category ? [`      ${xmlElement('category', issue.category.name)}`] : []),
  '    </item>',
];
