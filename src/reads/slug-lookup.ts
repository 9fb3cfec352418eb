import type { ArchiveIndex } from './cached-value.js';

/**
 * Answers "is this slug a public issue?" from the archive index, so a scan of unknown slugs
 * costs the upstream nothing (docs/contract.md "Availability under abuse"). The index lists every
 * public issue when it is complete; a slug it lacks may only be newer than it, which one refresh
 * settles: at most one at a time, and not more often than `minRefreshIntervalMs`.
 */
export type SlugVerdict =
  /** In the index: read it by slug (the detail has the HTML the index lacks). */
  | 'listed'
  /** Not in a complete index, even after a refresh: a 404 without an upstream call. */
  | 'absent'
  /** No index, or one cut off at ARCHIVE_MAX_ISSUES: only the upstream can tell, by slug. */
  | 'unknown';

/** The index as the cache holds it, with when the upstream answered. */
export interface IndexCopy {
  index: ArchiveIndex;
  fetchedAt: number;
}

export interface SlugLookupOptions<C> {
  /** The cached index (loading it once if there is none); `undefined` when it cannot be had. */
  read: (context: C) => Promise<IndexCopy | undefined>;
  /** The index loaded anew from the upstream; `undefined` when that failed. */
  refresh: (context: C) => Promise<IndexCopy | undefined>;
  now: () => number;
  minRefreshIntervalMs: number;
}

/** The shortest time between two index refreshes a missing slug may cause. */
export const INDEX_REFRESH_MIN_INTERVAL_MS = 5_000;

export function createSlugLookup<C>(options: SlugLookupOptions<C>) {
  const { read, refresh, now, minRefreshIntervalMs } = options;
  let refreshing: Promise<IndexCopy | 'failed'> | undefined;
  let lastRefreshAt = Number.NEGATIVE_INFINITY;

  /** The refresh under way, or one started now if the last one (and the copy) are old enough. */
  function refreshed(copy: IndexCopy, context: C): Promise<IndexCopy | 'failed'> | undefined {
    const time = now();
    if (refreshing === undefined && time - Math.max(lastRefreshAt, copy.fetchedAt) >= minRefreshIntervalMs) {
      lastRefreshAt = time;
      refreshing = refresh(context)
        .then((newer) => newer ?? 'failed', () => 'failed' as const)
        .finally(() => {
          refreshing = undefined;
        });
    }
    return refreshing;
  }

  return async function lookUp(slug: string, context: C): Promise<SlugVerdict> {
    const copy = await read(context).catch(() => undefined);
    if (!copy?.index.complete) return 'unknown';
    if (copy.index.slugs.has(slug)) return 'listed';
    // No refresh due: the copy was read or refreshed moments ago, and it settles the slug.
    const newer = (await refreshed(copy, context)) ?? copy;
    // A refresh that failed cannot say the slug is new: the upstream, by slug, has to.
    if (newer === 'failed') return 'unknown';
    if (newer.index.slugs.has(slug)) return 'listed';
    // The archive has grown past ARCHIVE_MAX_ISSUES since: the index no longer settles it.
    return newer.index.complete ? 'absent' : 'unknown';
  };
}
