import type { IssueSummary } from '../public-shapes.js';

/** Every URL absolute, built by the caller; `feedUrl` (`rel="self"`) only when the caller knows its address. */
export interface FeedOptions {
  issueUrl: (slug: string) => string;
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
  const known = [issue.updatedAt, issue.sentAt].map((date) => Date.parse(date ?? '')).filter((time) => !Number.isNaN(time));
  return known.length === 0 ? null : new Date(Math.max(...known)).toISOString();
}

export function latestUpdate(issues: readonly IssueSummary[], fallback: string): string {
  // ISO dates in one format: their text sorts as their times do.
  const dates = issues.map(issueUpdatedAt).filter((date) => date !== null);
  return dates.sort().at(-1) ?? fallback;
}
