import { isFresh, isWithinStaleIfError, isWithinStaleWhileRevalidate, type FreshnessRules, type Loader } from './read-through-cache.js';

/** Shared by isolates or instances (the Cache API, Redis). `claimRefresh` is false when another instance holds the refresh. */
export interface SharedTier {
  get(key: string): Promise<SharedEntry | undefined>;
  put(key: string, entry: SharedEntry): Promise<void>;
  delete(key: string): Promise<void>;
  claimRefresh?(key: string, ms: number): Promise<boolean>;
}

export type SharedEntry = { payload: string; fetchedAt: number };

interface SharedTierOptions<V> {
  store: SharedTier;
  rules: FreshnessRules;
  now: () => number;
  encode: (value: V) => SharedEntry;
  decode: (entry: SharedEntry) => V | undefined;
  onRefreshError?: (key: string, error: unknown) => void;
}

export function withSharedTier<V>(load: Loader<V>, options: SharedTierOptions<V>): Loader<V> {
  const { store, rules, now, encode, decode } = options;
  // The in-memory cache holds a copy handed back stale for 1 ms only: without this, every request would start its own refresh.
  const refreshing = new Map<string, Promise<void>>();

  return async function loadThroughSharedTier(key, waitUntil, client, previous) {
    const entry = await store.get(key).catch(() => undefined);
    const stored = entry === undefined ? undefined : decode(entry);
    const staleAt = entry === undefined ? 0 : entry.fetchedAt + rules.ttlMs;
    const time = now();
    if (stored !== undefined && isFresh(staleAt, time)) return stored;
    const base = stored ?? previous;
    if (stored !== undefined && isWithinStaleWhileRevalidate(staleAt, time, rules)) {
      let running = refreshing.get(key);
      if (running === undefined) {
        running = (async () => {
          try {
            if (store.claimRefresh && !(await store.claimRefresh(key, REFRESH_CLAIM_MS).catch(() => true))) return;
            const value = await load(key, waitUntil, client, base);
            await (value === undefined ? store.delete(key) : store.put(key, encode(value)));
          } catch (error) {
            options.onRefreshError?.(key, error);
          }
        })().finally(() => refreshing.delete(key));
        refreshing.set(key, running);
      }
      // Started before `waitUntil?.()`, which would skip it where there is none (Node).
      waitUntil?.(running);
      return stored;
    }
    let value: V | undefined;
    try {
      value = await load(key, waitUntil, client, base);
    } catch (error) {
      if (stored !== undefined && isWithinStaleIfError(staleAt, time, rules)) {
        options.onRefreshError?.(key, error);
        return stored;
      }
      throw error;
    }
    if (value !== undefined) {
      const storing = store.put(key, encode(value)).catch(() => undefined);
      waitUntil?.(storing);
    }
    return value;
  };
}

/** Longer than a whole archive read; short enough that a crashed instance's claim does not keep a copy stale long. */
const REFRESH_CLAIM_MS = 30_000;

const FETCHED_AT_HEADER = 'X-Fetched-At';

// Keys become URLs under the upstream base URL and a digest of the API key (URLs may be logged): shared only when both are the same.
export function createWorkersSharedCache(cache: Cache, options: { namespace: string; apiKey: string; maxAgeSeconds: number }): SharedTier {
  const keyed = new TextEncoder().encode(`newsletter-bff shared cache\0${options.apiKey}`);
  const prefix = crypto.subtle.digest('SHA-256', keyed).then((digest) => {
    const hex = [...new Uint8Array(digest).subarray(0, 8)].map((byte) => byte.toString(16).padStart(2, '0')).join('');
    return `https://newsletter-bff.cache/v1/${encodeURIComponent(options.namespace)}/${hex}/`;
  });
  const urlOf = async (key: string) => (await prefix) + encodeURIComponent(key);
  return {
    async get(key) {
      const response = await cache.match(await urlOf(key));
      if (!response) return undefined;
      const fetchedAt = Number(response.headers.get(FETCHED_AT_HEADER));
      if (!Number.isFinite(fetchedAt)) return undefined;
      return { payload: await response.text(), fetchedAt };
    },
    async put(key, entry) {
      const headers = { 'Cache-Control': `max-age=${options.maxAgeSeconds}`, [FETCHED_AT_HEADER]: String(entry.fetchedAt) };
      await cache.put(await urlOf(key), new Response(entry.payload, { headers: { 'Content-Type': 'application/json', ...headers } }));
    },
    async delete(key) {
      await cache.delete(await urlOf(key));
    },
  };
}
