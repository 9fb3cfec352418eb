import type { ArchiveIndex } from './cached-value.js';

export type IndexCopy = { index: ArchiveIndex; fetchedAt: number };

/** `read`: the cached index, `refresh`: one loaded anew from the upstream; `undefined` when it cannot be had. */
interface SlugLookupOptions<C> {
  read: (context: C) => Promise<IndexCopy | undefined>;
  refresh: (context: C) => Promise<IndexCopy | undefined>;
  now: () => number;
  minRefreshIntervalMs: number;
}

export const INDEX_REFRESH_MIN_INTERVAL_MS = 5_000;

// Answers "is this slug a public issue?" from the archive index, so a scan of unknown slugs costs the upstream nothing (docs/contract.md
// "Availability under abuse"). A slug a complete index lacks may only be newer than it, which one refresh settles: one at a time, at most
// every `minRefreshIntervalMs`. 'unknown': no index, or one cut off at ARCHIVE_MAX_ISSUES: only the upstream can tell, by slug.
export function createSlugLookup<C>(options: SlugLookupOptions<C>) {
  const { read, refresh, now, minRefreshIntervalMs } = options;
  // A refresh that failed answers `undefined`.
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
    // No refresh due: the copy was read moments ago, and it settles the slug.
    const due = refreshed(copy, context);
    const newer = due === undefined ? copy : await due;
    // A refresh that failed cannot say the slug is new: the upstream, by slug, has to.
    if (newer === undefined) return 'unknown';
    if (newer.index.slugs.has(slug)) return 'listed';
    // The archive has grown past ARCHIVE_MAX_ISSUES since: the index no longer settles it.
    return newer.index.complete ? 'absent' : 'unknown';
  };
}
