import type { ArchiveIndex } from './cached-value.js';

export type IndexCopy = { index: ArchiveIndex; fetchedAt: number };

interface SlugLookupOptions<C> {
  read: (context: C) => Promise<IndexCopy | undefined>;
  refresh: (context: C) => Promise<IndexCopy | undefined>;
  now: () => number;
  minRefreshIntervalMs: number;
}

export const INDEX_REFRESH_MIN_INTERVAL_MS = 5_000;

// A scan of unknown slugs costs the upstream nothing (docs/contract.md "Availability under abuse"). A slug a complete index lacks may
// only be newer than it, which one refresh settles; 'unknown': only the upstream can tell, by slug.
export function createSlugLookup<C>(options: SlugLookupOptions<C>) {
  const { read, refresh, now, minRefreshIntervalMs } = options;
  let refreshing: Promise<IndexCopy | undefined> | undefined;
  let lastRefreshAt = Number.NEGATIVE_INFINITY;

  function refreshed(copy: IndexCopy, context: C): Promise<IndexCopy | undefined> | undefined {
    const time = now();
    if (refreshing === undefined && time - Math.max(lastRefreshAt, copy.fetchedAt) >= minRefreshIntervalMs) {
      lastRefreshAt = time;
      refreshing = refresh(context)
        .catch(() => undefined)
        .finally(() => {
          refreshing = undefined;
        });
    }
    return refreshing;
  }

  return async function lookUp(slug: string, context: C): Promise<'listed' | 'absent' | 'unknown'> {
    const copy = await read(context).catch(() => undefined);
    if (!copy?.index.complete) return 'unknown';
    if (copy.index.slugs.has(slug)) return 'listed';
    const due = refreshed(copy, context);
    const newer = due === undefined ? copy : await due;
    // A failed refresh, or an archive grown past ARCHIVE_MAX_ISSUES since, cannot settle it.
    if (newer === undefined) return 'unknown';
    if (newer.index.slugs.has(slug)) return 'listed';
    return newer.index.complete ? 'absent' : 'unknown';
  };
}
