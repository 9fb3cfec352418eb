import { parseHttpUrl } from '../http/origins.js';
import type { IssueDetail, IssueNeighbour, IssueSummary, PublicCategory } from '../public-shapes.js';
import { SLUG_PATTERN } from '../slug.js';
import type { UpstreamCategory, UpstreamIssue } from '../upstream/schemas.js';

// Field by field, an allow-list: whatever the upstream adds (stats, audience, ids…) can never reach a response.

export function isPublicIssue(issue: UpstreamIssue): issue is UpstreamIssue & { slug: string } {
  return issue.status === 'sent' && issue.isPublic === true && typeof issue.slug === 'string' && SLUG_PATTERN.test(issue.slug);
}

export const toPublicCategory = (category: UpstreamCategory): PublicCategory => ({ name: category.name, slug: category.slug });

export function toIssueSummary(issue: UpstreamIssue & { slug: string }, readingMinutes: number | null = null): IssueSummary {
  const category = issue.category ?? issue.categories?.[0] ?? null;
  return {
    slug: issue.slug,
    subject: issue.subject,
    previewText: issue.previewText ?? null,
    // A site puts this in <img src>: only http(s) URLs pass, so `javascript:` or `data:` cannot.
    thumbnailUrl: parseHttpUrl(issue.thumbnailUrl)?.href ?? null,
    sentAt: isoDateOrNull(issue.sentAt),
    updatedAt: isoDateOrNull(issue.updatedAt),
    // A category whose slug breaks the slug rule is dropped: a link to it could never resolve.
    category: category && SLUG_PATTERN.test(category.slug) ? toPublicCategory(category) : null,
    readingMinutes,
  };
}

type Letter = Pick<IssueDetail, 'contentHtml' | 'readingMinutes'>;
export type Neighbours = Pick<IssueDetail, 'newer' | 'older'>;

export function toIssueDetail(summary: IssueSummary, { readingMinutes, contentHtml }: Letter, { newer, older }: Neighbours): IssueDetail {
  return { ...summary, readingMinutes, contentHtml, newer, older };
}

export const toIssueNeighbour = ({ slug, subject, sentAt }: IssueSummary): IssueNeighbour => ({ slug, subject, sentAt });

export const compareNewestFirst = (a: IssueSummary, b: IssueSummary) => sentTime(b) - sentTime(a) || bySlug(a, b);

// Unsent last; two unsent give NaN, which falls through to the slug as equal times do.
const sentTime = (summary: IssueSummary) => (summary.sentAt === null ? Number.NEGATIVE_INFINITY : Date.parse(summary.sentAt));

export const compareByName = (a: PublicCategory, b: PublicCategory) =>
  a.name.localeCompare(b.name, 'en', { sensitivity: 'base' }) || bySlug(a, b);

const bySlug = (a: { slug: string }, b: { slug: string }) => (a.slug < b.slug ? -1 : a.slug > b.slug ? 1 : 0);

function isoDateOrNull(value: string | null | undefined): string | null {
  const time = Date.parse(value ?? '');
  return Number.isNaN(time) ? null : new Date(time).toISOString();
}
