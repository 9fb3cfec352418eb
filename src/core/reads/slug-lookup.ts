import type { ArchiveIndex, CachedValue } from './cached-value.js';
import type { Loader, ReadThroughCache, WaitUntil } from './read-through-cache.js';

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
        .then(
          (newer) => newer ?? 'failed',
          () => 'failed' as const,
        )
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

/** What an issue read passes on to the index loads it causes. */
export interface ReadContext {
  waitUntil: WaitUntil | undefined;
  client: string | undefined;
}

/** The lookup over the read cache's archive entry: `load` as an archive page loads it, `loadFromUpstream` past any shared tier. */
export function createIndexedSlugLookup(options: {
  cache: ReadThroughCache<CachedValue>;
  key: string;
  load: Loader<CachedValue>;
  loadFromUpstream: Loader<CachedValue>;
  now: () => number;
  minRefreshIntervalMs: number;
}) {
  const { cache, key, now } = options;
  async function indexCopy(forceRefresh: boolean, { waitUntil, client }: ReadContext): Promise<IndexCopy | undefined> {
    const load = forceRefresh ? options.loadFromUpstream : options.load;
    const { value } = await cache.read(key, load, waitUntil, { client, forceRefresh });
    return value?.kind === 'archive' ? value : undefined;
  }
  return createSlugLookup<ReadContext>({
    // An issue read keeps a kept index fresh (as an archive page would) but never loads one
    // cold: without one, a slug is read by slug as before, within the read budget.
    read: async (context) => (cache.has(key) ? indexCopy(false, context) : undefined),
    // A failed refresh hands back the copy it had (stale-if-error): that is no answer.
    refresh: async (context) => {
      const startedAt = now();
      const copy = await indexCopy(true, context);
      return copy !== undefined && copy.fetchedAt >= startedAt ? copy : undefined;
    },
    now,
    minRefreshIntervalMs: options.minRefreshIntervalMs,
  });
}
