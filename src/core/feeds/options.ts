import type { IssueSummary } from '../public-shapes.js';

/** What a feed needs besides the issues; every URL absolute, built by the caller. */
export interface FeedOptions {
  /** The public page of one issue (the entry's link and its id). */
  issueUrl: (slug: string) => string;
  /** Where this feed itself is served (`rel="self"`); no such link when the caller does not know its address. */
  feedUrl?: string;
  /** The site's home page. */
  siteUrl: string;
  /** The feed's title (the publication's name, with a category's name for a category feed). */
  title: string;
  /** The publication's name, as the feed's author (Atom); the title when not given. */
  author?: string;
  /** One line about the publication (RSS requires a channel description; Atom's subtitle). */
  description?: string;
  /** When the feed last changed, ISO 8601: from the data (see `latestUpdate`), never the clock, so equal input gives equal bytes. */
  updated: string;
}

/**
 * When an issue last changed: its `updatedAt`, or its `sentAt` when that is later or the only
 * date it has (an upstream that does not move `updatedAt` on sending); null without either.
 */
export function issueUpdatedAt(issue: Pick<IssueSummary, 'sentAt' | 'updatedAt'>): string | null {
  const updated = issue.updatedAt === null ? Number.NaN : Date.parse(issue.updatedAt);
  const sent = issue.sentAt === null ? Number.NaN : Date.parse(issue.sentAt);
  if (Number.isNaN(updated)) return Number.isNaN(sent) ? null : new Date(sent).toISOString();
  return new Date(Number.isNaN(sent) ? updated : Math.max(updated, sent)).toISOString();
}

/** The latest change among the issues (see `issueUpdatedAt`), or the given fallback when none has a date. */
export function latestUpdate(issues: readonly IssueSummary[], fallback: string): string {
  let latest: string | undefined;
  for (const issue of issues) {
    const updated = issueUpdatedAt(issue);
    if (updated !== null && (latest === undefined || updated > latest)) latest = updated;
  }
  return latest ?? fallback;
}
