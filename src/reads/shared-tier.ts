/**
 * A second cache tier shared by the isolates of one Workers location (the Cache API,
 * `caches.default`). The in-memory cache is per isolate, and isolates are many: without this
 * tier every new isolate makes its own cold upstream reads. Off on Node (one process, one cache).
 */
export interface SharedTier {
  get(key: string): Promise<SharedEntry | undefined>;
  put(key: string, entry: SharedEntry): Promise<void>;
  delete(key: string): Promise<void>;
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
 * base URL) and a digest of the API key: the upstream answers for "the active account set of
 * the calling key", so two deployments on one zone share entries only when both are the same.
 * Entries are kept for `maxAgeSeconds` (TTL + stale-if-error); freshness is judged by
 * `fetchedAt`, like the in-memory tier. On `*.workers.dev` the Cache API stores nothing: this
 * tier then just misses.
 */
export function createWorkersSharedCache(
  cache: Cache,
  options: { namespace: string; apiKey: string; maxAgeSeconds: number },
): SharedTier {
  // Computed once, on first use (digesting is asynchronous, and creating the tier must not be).
  let prefix: Promise<string> | undefined;
  const urlOf = async (key: string) => {
    prefix ??= keyDigest(options.apiKey).then(
      (digest) => `https://newsletter-bff.cache/${FORMAT_VERSION}/${encodeURIComponent(options.namespace)}/${digest}/`,
    );
    return (await prefix) + encodeURIComponent(key);
  };
  return {
    async get(key) {
      const response = await cache.match(await urlOf(key));
      if (!response) return undefined;
      const fetchedAt = Number(response.headers.get(FETCHED_AT_HEADER));
      if (!Number.isFinite(fetchedAt)) return undefined;
      return { payload: await response.text(), fetchedAt };
    },
    async put(key, entry) {
      await cache.put(
        await urlOf(key),
        new Response(entry.payload, {
          headers: {
            'Content-Type': 'application/json',
            'Cache-Control': `max-age=${options.maxAgeSeconds}`,
            [FETCHED_AT_HEADER]: String(entry.fetchedAt),
          },
        }),
      );
    },
    async delete(key) {
      await cache.delete(await urlOf(key));
    },
  };
}

/**
 * 16 hex digits of SHA-256 over the key: enough to keep keys apart, and the key itself never
 * becomes part of a cache URL (which the runtime may log or expose in its tooling).
 */
async function keyDigest(apiKey: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(`newsletter-bff shared cache\0${apiKey}`));
  return [...new Uint8Array(digest).subarray(0, 8)].map((byte) => byte.toString(16).padStart(2, '0')).join('');
}
