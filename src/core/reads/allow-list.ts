import { parseHttpUrl } from '../http/origins.js';
import type { IssueDetail, IssueNeighbour, IssueSummary, PublicCategory } from '../public-shapes.js';
import { SLUG_PATTERN } from '../slug.js';
import type { UpstreamCategory, UpstreamIssue } from '../upstream/schemas.js';

/**
 * The public shapes (core/public-shapes.ts) built field by field from parsed upstream records,
 * an allow-list: stats, audience, createdBy, workspace and account-set ids, contentJson,
 * scheduledFor and upstream ids can never reach a response, whatever the upstream adds.
 */

/** A public page shows only sent, website-visible issues with a usable slug, whatever the upstream sent us. */
export function isPublicIssue(issue: UpstreamIssue): issue is UpstreamIssue & { slug: string } {
  return issue.status === 'sent' && issue.isPublic === true && typeof issue.slug === 'string' && SLUG_PATTERN.test(issue.slug);
}

export function toPublicCategory(category: UpstreamCategory): PublicCategory {
  return { name: category.name, slug: category.slug };
}

/**
 * An issue's category is shown only when its slug keeps the slug rule: the categories route
 * drops any other, so a link to it (`?category=`, a site's category page) could never resolve.
 * Such an issue is still listed, with `category: null`.
 */
function linkableCategory(issue: UpstreamIssue): PublicCategory | null {
  const category = issue.category ?? issue.categories?.[0] ?? null;
  return category && SLUG_PATTERN.test(category.slug) ? toPublicCategory(category) : null;
}

/** `readingMinutes`: from the letter's words when the caller read them (letter-text.ts), else null. */
export function toIssueSummary(issue: UpstreamIssue & { slug: string }, readingMinutes: number | null = null): IssueSummary {
  return {
    slug: issue.slug,
    subject: issue.subject,
    previewText: issue.previewText ?? null,
    thumbnailUrl: httpUrlOrNull(issue.thumbnailUrl),
    sentAt: isoDateOrNull(issue.sentAt),
    updatedAt: isoDateOrNull(issue.updatedAt),
    category: linkableCategory(issue),
    readingMinutes,
  };
}

/** An issue page: the summary with its letter, its reading time and its neighbours in the archive. */
export function toIssueDetail(
  summary: IssueSummary,
  letter: { contentHtml: string | null; readingMinutes: number },
  neighbours: { newer: IssueNeighbour | null; older: IssueNeighbour | null },
): IssueDetail {
  return {
    ...summary,
    readingMinutes: letter.readingMinutes,
    contentHtml: letter.contentHtml,
    newer: neighbours.newer,
    older: neighbours.older,
  };
}

/** What an issue page shows of a neighbouring issue. */
export function toIssueNeighbour(summary: IssueSummary): IssueNeighbour {
  return { slug: summary.slug, subject: summary.subject, sentAt: summary.sentAt };
}

/** Newest `sentAt` first; ties (and issues without a date, last) by slug, so paging is stable. */
export function compareNewestFirst(a: IssueSummary, b: IssueSummary): number {
  const timeA = a.sentAt === null ? Number.NEGATIVE_INFINITY : Date.parse(a.sentAt);
  const timeB = b.sentAt === null ? Number.NEGATIVE_INFINITY : Date.parse(b.sentAt);
  if (timeA !== timeB) return timeB - timeA;
  return a.slug < b.slug ? -1 : a.slug > b.slug ? 1 : 0;
}

/** Categories sorted by name for navigation (case-insensitive, then by slug). */
export function compareByName(a: PublicCategory, b: PublicCategory): number {
  return a.name.localeCompare(b.name, 'en', { sensitivity: 'base' }) || (a.slug < b.slug ? -1 : a.slug > b.slug ? 1 : 0);
}

// A site puts this in <img src>: only http(s) URLs pass, so `javascript:` or `data:` cannot.
function httpUrlOrNull(value: string | null | undefined): string | null {
  return parseHttpUrl(value)?.href ?? null;
}

function isoDateOrNull(value: string | null | undefined): string | null {
  if (!value) return null;
  const time = Date.parse(value);
  return Number.isNaN(time) ? null : new Date(time).toISOString();
}
