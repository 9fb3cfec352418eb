import {
  isFresh,
  isWithinStaleIfError,
  isWithinStaleWhileRevalidate,
  type FreshnessRules,
  type Loader,
  type WaitUntil,
} from './read-through-cache.js';

/**
 * A second cache tier shared by the isolates of one Workers location (the Cache API,
 * `caches.default`). The in-memory cache is per isolate, and isolates are many: without this
 * tier every new isolate makes its own cold upstream reads. Off on Node (one process, one cache).
 */
export interface SharedTier {
  get(key: string): Promise<SharedEntry | undefined>;
  put(key: string, entry: SharedEntry): Promise<void>;
  delete(key: string): Promise<void>;
  /**
   * Claims the refresh of `key` for `ms` among the instances sharing the tier: false when
   * another holds it (that one's answer will replace the shared copy). Without it, every
   * instance refreshes on its own.
   */
  claimRefresh?(key: string, ms: number): Promise<boolean>;
}

/** A serialized cached value and when it was fetched from the upstream (ms since the epoch). */
export interface SharedEntry {
  payload: string;
  fetchedAt: number;
}

export interface SharedTierOptions<V> {
  store: SharedTier;
  /** The in-memory cache's rules, judged on the copy's `fetchedAt`. */
  rules: FreshnessRules;
  now: () => number;
  /** A value as the tier stores it, and back: an entry that does not decode is a miss. */
  encode: (value: V) => SharedEntry;
  decode: (entry: SharedEntry) => V | undefined;
  /** A refresh failed where no request sees the error: behind the response, or answered with the shared copy. */
  onRefreshError?: (key: string, error: unknown) => void;
}

/**
 * Wraps a loader so that it asks the shared tier first, by the in-memory cache's own rules: a
 * fresh copy another isolate stored saves the upstream call; one past its TTL but within
 * stale-while-revalidate is answered at once while one refresh runs behind the response and
 * replaces it for every isolate; an older one is kept for stale-if-error. What the wrapped
 * loader loads is stored for the other isolates.
 */
export function withSharedTier<V>(load: Loader<V>, options: SharedTierOptions<V>): Loader<V> {
  const { store, rules, now, encode, decode } = options;
  /**
   * The refreshes this isolate has out, by key. The in-memory cache holds a copy handed back
   * stale for 1 ms only, so while the upstream has not answered, every request asks this tier
   * again and finds the shared copy still stale: without this, each of them started its own
   * upstream refresh (10 calls where Node makes 3 in 2.5 s of traffic at a 2 s TTL).
   */
  const refreshing = new Map<string, Promise<void>>();

  /** The loader's answer replaces the shared copy; a value found gone leaves the tier too. */
  async function refresh(
    key: string,
    waitUntil: WaitUntil | undefined,
    client: string | undefined,
    previous: V | undefined,
  ): Promise<void> {
    try {
      const value = await load(key, waitUntil, client, previous);
      await (value === undefined ? store.delete(key) : store.put(key, encode(value)));
    } catch (error) {
      options.onRefreshError?.(key, error);
    }
  }

  /** Whether this instance should refresh `key`: always, unless the tier says another one is. */
  const claim = async (key: string) => (store.claimRefresh ? store.claimRefresh(key, REFRESH_CLAIM_MS).catch(() => true) : true);

  /**
   * One refresh of `key` at a time in this isolate (a request that finds one out joins it), and
   * none while another instance holds the tier's claim (its answer lands in the tier for everyone).
   */
  function refreshOnce(key: string, waitUntil: WaitUntil | undefined, client: string | undefined, base: V | undefined): Promise<void> {
    let running = refreshing.get(key);
    if (running === undefined) {
      running = (async () => {
        if (await claim(key)) await refresh(key, waitUntil, client, base);
      })().finally(() => refreshing.delete(key));
      refreshing.set(key, running);
    }
    return running;
  }

  return async function loadThroughSharedTier(key, waitUntil, client, previous) {
    const entry = await store.get(key).catch(() => undefined);
    const stored = entry === undefined ? undefined : decode(entry);
    const staleAt = entry === undefined ? 0 : entry.fetchedAt + rules.ttlMs;
    const time = now();
    if (stored !== undefined && isFresh(staleAt, time)) return stored;
    // The newer of the two copies is what a refresh builds on.
    const base = stored ?? previous;
    if (stored !== undefined && isWithinStaleWhileRevalidate(staleAt, time, rules)) {
      // Handed back past its TTL, the copy is served at once, and this isolate asks the tier
      // again after REFRESH_FAILURE_BACKOFF_MS (read-through-cache.ts), by when the refresh has landed.
      const refreshing = refreshOnce(key, waitUntil, client, base);
      waitUntil?.(refreshing);
      return stored;
    }
    let value: V | undefined;
    try {
      value = await load(key, waitUntil, client, base);
    } catch (error) {
      if (stored !== undefined && isWithinStaleIfError(staleAt, time, rules)) {
        // Answered with the shared copy, so the caller never sees the failure: told here.
        options.onRefreshError?.(key, error);
        return stored;
      }
      throw error;
    }
    if (value !== undefined) waitUntil?.(store.put(key, encode(value)).catch(() => undefined));
    return value;
  };
}

/**
 * How long one instance's claim on a refresh stops the others: longer than a refresh takes
 * (a whole archive read of thousands of rows takes seconds), short enough that a crashed
 * instance's claim does not keep the copy stale for long.
 */
export const REFRESH_CLAIM_MS = 30_000;

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
export function createWorkersSharedCache(cache: Cache, options: { namespace: string; apiKey: string; maxAgeSeconds: number }): SharedTier {
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
