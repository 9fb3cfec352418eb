import type { IssueSummary } from '../public-shapes.js';

/** Every URL absolute, built by the caller. */
export interface FeedOptions {
  issueUrl: (slug: string) => string;
  /** `rel="self"`; none when the caller does not know its address. */
  feedUrl?: string;
  siteUrl: string;
  title: string;
  /** Atom's author; the title when not given. */
  author?: string;
  description?: string;
  /** From the data (`latestUpdate`), never the clock, so equal input gives equal bytes. */
  updated: string;
}

/** The later of `updatedAt` and `sentAt` (an upstream may not move `updatedAt` on sending); null without either. */
export function issueUpdatedAt(issue: Pick<IssueSummary, 'sentAt' | 'updatedAt'>): string | null {
  const updated = issue.updatedAt === null ? Number.NaN : Date.parse(issue.updatedAt);
  const sent = issue.sentAt === null ? Number.NaN : Date.parse(issue.sentAt);
  if (Number.isNaN(updated)) return Number.isNaN(sent) ? null : new Date(sent).toISOString();
  return new Date(Number.isNaN(sent) ? updated : Math.max(updated, sent)).toISOString();
}

export function latestUpdate(issues: readonly IssueSummary[], fallback: string): string {
  let latest: string | undefined;
  for (const issue of issues) {
    const updated = issueUpdatedAt(issue);
    if (updated !== null && (latest === undefined || updated > latest)) latest = updated;
  }
  return latest ?? fallback;
}
