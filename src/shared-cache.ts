/**
 * A second cache tier shared by the isolates of one Workers location (the Cache API,
 * `caches.default`). The in-memory cache is per isolate, and isolates are many: without this
 * tier every new isolate makes its own cold upstream reads. Off on Node (one process, one cache).
 */
export interface SharedTier {
  get(key: string): Promise<SharedEntry | undefined>;
  put(key: string, entry: SharedEntry): Promise<void>;
}

/** A serialized cached value and when it was fetched from the upstream (ms since the epoch). */
export interface SharedEntry {
  payload: string;
  fetchedAt: number;
}

const FETCHED_AT_HEADER = 'X-Fetched-At';
// Bumped when the payload format changes, so an old deployment's entries are never read.
const FORMAT_VERSION = 'v1';

/**
 * The Cache API as a shared tier. Keys become synthetic URLs under the namespace (the upstream
 * base URL), so two deployments on one zone do not share entries. Entries are kept for
 * `maxAgeSeconds` (TTL + stale-if-error); freshness is judged by `fetchedAt`, like the
 * in-memory tier. On `*.workers.dev` the Cache API stores nothing: this tier then just misses.
 */
export function createWorkersSharedCache(
  cache: Cache,
  options: { namespace: string; maxAgeSeconds: number },
): SharedTier {
  const prefix = `https://newsletter-bff.cache/${FORMAT_VERSION}/${encodeURIComponent(options.namespace)}/`;
  const urlOf = (key: string) => prefix + encodeURIComponent(key);
  return {
    async get(key) {
      const response = await cache.match(urlOf(key));
      if (!response) return undefined;
      const fetchedAt = Number(response.headers.get(FETCHED_AT_HEADER));
      if (!Number.isFinite(fetchedAt)) return undefined;
      return { payload: await response.text(), fetchedAt };
    },
    async put(key, entry) {
      await cache.put(
        urlOf(key),
        new Response(entry.payload, {
          headers: {
            'Content-Type': 'application/json',
            'Cache-Control': `max-age=${options.maxAgeSeconds}`,
            [FETCHED_AT_HEADER]: String(entry.fetchedAt),
          },
        }),
      );
    },
  };
}
