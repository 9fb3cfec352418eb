import { LRUCache } from 'lru-cache';
import { noopMetrics, type Metrics } from '../metrics.js';

/** How a read was answered, sent as `X-Cache`. */
export const CACHE_STATES = ['HIT', 'MISS', 'STALE'] as const;
export type CacheState = (typeof CACHE_STATES)[number];

/** Schedules work that must outlive the response (Workers' `waitUntil`; on Node it simply runs). */
export type WaitUntil = (promise: Promise<unknown>) => void;

export interface CacheStats {
  hits: number;
  misses: number;
  staleServed: number;
  refreshFailures: number;
  entries: number;
  bytes: number;
}

/**
 * Loads the value of a key; `undefined` means "does not exist" and removes any stale copy.
 * `client` is the visitor whose read started the load (their IP, for the read budget);
 * `previous` the copy it replaces, if one is kept (to refresh from rather than read anew).
 */
export type Loader<V> = (key: string, waitUntil: WaitUntil | undefined, client?: string, previous?: V) => Promise<V | undefined>;

/** How one read goes about it, besides its loader. */
export interface ReadOptions {
  /** The visitor's IP, handed to the loader. */
  client?: string | undefined;
  /** Load anew even when the copy is fresh (joining a load already under way); the old copy only on failure. */
  forceRefresh?: boolean;
}

/** How long a value is fresh, and how long past that a stale copy may still be served (docs/contract.md "Caching"). */
export interface FreshnessRules {
  ttlMs: number;
  /** After `ttlMs`, a stale value is served at once while one background refresh runs. */
  staleWhileRevalidateMs: number;
  /** After that, a stale value is served only when a refresh fails, up to this age past `ttlMs`. */
  staleIfErrorMs: number;
}

/** Fresh until `staleAt` (when it was fetched + its TTL): served as it is, nothing loaded. */
export function isFresh(staleAt: number, time: number): boolean {
  return time <= staleAt;
}

/** Stale, but young enough to be served at once while one refresh replaces it. */
export function isWithinStaleWhileRevalidate(staleAt: number, time: number, rules: FreshnessRules): boolean {
  return time - staleAt <= rules.staleWhileRevalidateMs;
}

/** Stale, but young enough to be served when a refresh fails; older, it is dropped. */
export function isWithinStaleIfError(staleAt: number, time: number, rules: FreshnessRules): boolean {
  return time - staleAt <= rules.staleIfErrorMs;
}

export interface ReadThroughCacheOptions<V> extends FreshnessRules {
  /** When a loaded value was fetched, if earlier than now (a copy from a shared tier). */
  fetchedAtOf?: (value: V) => number | undefined;
  /** Approximate bytes a value holds in memory. */
  sizeOf: (value: V) => number;
  maxBytes: number;
  /** One entry may take at most this much (default: half of maxBytes). */
  maxEntryBytes?: number;
  /** How long a tombstone (a stale value whose source said it is gone) answers "does not exist". */
  notFoundTtlMs: number;
  now: () => number;
  onLoadError?: (key: string, error: unknown) => void;
  /** A load brought a value (to end a failure spell: src/upstream-failures.ts). */
  onLoaded?: (key: string, value: V) => void;
  /**
   * When a load that failed with `error` may be tried again (ms since the epoch): a hold-off's
   * end. Until then its key's stale copy is served without a load (which could only be held off
   * too); undefined: the next read may load it at once.
   */
  retryAtOf?: (error: unknown) => number | undefined;
  /** A loaded value over `maxEntryBytes`: served, but not kept, so every read loads it again. */
  onTooLarge?: (key: string, bytes: number, maxEntryBytes: number) => void;
  /** Told how each read was answered and of each entry lru-cache drops on its own. */
  metrics?: Pick<Metrics, 'cacheRead' | 'cacheEviction'>;
}

export interface ReadResult<V> {
  value: V | undefined;
  state: CacheState;
}

export interface ReadThroughCache<V> {
  /**
   * The value of `key`, loaded with `load` when there is no fresh copy. One key is always
   * loaded by the same loader: concurrent reads share the load the first one started.
   */
  read(key: string, load: Loader<V>, waitUntil?: WaitUntil, options?: ReadOptions): Promise<ReadResult<V>>;
  /** Whether any copy of `key` is kept, fresh or stale (a tombstone counts), without loading it. */
  has(key: string): boolean;
  /**
   * `answer` of the value of `key` when a fresh one is held and `answer` can use it, counted as
   * a HIT like `read`'s; otherwise `undefined`, and nothing is loaded or counted (the caller
   * then uses `read`). Synchronous.
   */
  readFresh<R>(key: string, answer: (value: V) => R | undefined): R | undefined;
  /**
   * Keeps `value` for `key` as if it had just been loaded (fresh for the TTL from its
   * `fetchedAt`), unless it is larger than one entry may be: a copy another read brought along.
   */
  seed(key: string, value: V): void;
  /** Whether `value` is the fresh copy of `key` kept; not counted as a use. */
  holds(key: string, value: V): boolean;
  /**
   * Puts `next` in the place of `current` while that is still the fresh copy of `key` kept (a copy
   * made again behind the answer, its compressed bodies added), fresh as long as `current` was;
   * whether it did. Counted as no hit. A key with a load in flight is not one to replace: lru-cache
   * drops that load's answer (loads run on stale copies, and only the archive and the categories
   * are refreshed while fresh).
   */
  replace(key: string, current: V, next: V): boolean;
  /** The copy of `key` kept, fresh or stale, without loading or counting anything (it counts as used: the archive index must outlive the issues read from it). */
  peek(key: string): V | undefined;
  stats(): CacheStats;
  clear(): void;
}

interface Entry<V> {
  /** `undefined`: a tombstone that replaced a stale value whose source said it is gone. */
  value: V | undefined;
  fetchedAt: number;
  /** When the entry stops being fresh: `fetchedAt` + its TTL (a tombstone's is shorter). */
  staleAt: number;
  size: number;
  /** When the last refresh of this (stale) entry failed; starts the refresh back-off. */
  refreshFailedAt?: number;
  /** Before this, the stale entry is served without a load: the upstream calls it needs are held off. */
  retryAt?: number;
}

/** What one read hands to lru-cache's `fetchMethod`: which loader, the request's `waitUntil` and client. */
interface FetchContext<V> {
  load: Loader<V>;
  waitUntil: WaitUntil | undefined;
  client: string | undefined;
}

const TOMBSTONE_BYTES = 64;

/**
 * After a refresh of a key fails, its stale copy is served at once for this long (while one
 * background refresh runs) instead of every request waiting for the upstream to fail again,
 * up to UPSTREAM_TIMEOUT_MS each. Renewed by each failed refresh; never past `staleIfErrorMs`.
 */
export const REFRESH_FAILURE_BACKOFF_MS = 30_000;

/**
 * A bounded read-through cache on lru-cache's `fetchMethod`, which already gives single-flight
 * (concurrent misses share one load), stale-while-revalidate (`allowStale` +
 * `noDeleteOnStaleGet`) and stale-if-error (`allowStaleOnFetchRejection`). What we add is the
 * time limit on staleness, the back-off after a failed refresh and the HIT/MISS/STALE state
 * (docs/contract.md "Caching").
 */
export function createReadThroughCache<V>(options: ReadThroughCacheOptions<V>): ReadThroughCache<V> {
  const { sizeOf, ttlMs, notFoundTtlMs, now, onLoadError, onLoaded, onTooLarge, fetchedAtOf, retryAtOf, metrics = noopMetrics } = options;
  const maxEntryBytes = options.maxEntryBytes ?? Math.floor(options.maxBytes / 2);
  const counters = { hits: 0, misses: 0, staleServed: 0, refreshFailures: 0 };
  /** The reasons lru-cache gave when it aborted a load (key set, deleted or evicted meanwhile). */
  const abortReasons = new WeakSet<object>();

  const lru: LRUCache<string, Entry<V>, FetchContext<V>> = new LRUCache<string, Entry<V>, FetchContext<V>>({
    maxSize: options.maxBytes,
    maxEntrySize: maxEntryBytes,
    sizeCalculation: (entry) => entry.size,
    ttl: ttlMs,
    ttlAutopurge: false,
    perf: { now },
    // Staleness is checked against the injected clock on every read (no cached "now" timer).
    ttlResolution: 0,
    allowStale: true,
    noDeleteOnStaleGet: true,
    allowStaleOnFetchRejection: true,
    // lru-cache aborts a load in flight when its key is set (an archive read seeding an issue
    // copy), deleted or evicted, and by default rejects its readers with "replaced", "deleted" or
    // "evicted". Our loads run on regardless, so their readers get what was loaded; an overtaken
    // load's value is not stored. (A load that found nothing still rejects: see `read`.)
    ignoreFetchAbort: true,
    dispose: (_entry, _key, reason) => (reason === 'evict' || reason === 'expire' ? metrics.cacheEviction(reason) : undefined),
    fetchMethod: async (key, stale, { context, options: fetchOptions, signal }) => {
      // A block, not an expression: workerd warns of a listener that returns a value.
      const noteAbort = () => {
        if (signal.reason instanceof Object) abortReasons.add(signal.reason);
      };
      signal.addEventListener('abort', noteAbort, { once: true });
      const loading = context.load(key, context.waitUntil, context.client, stale?.value);
      // On Workers the isolate may be frozen once the response is sent: keep refreshes alive.
      context.waitUntil?.(loading.then(noop, noop));
      let value: V | undefined;
      try {
        value = await loading;
      } catch (error) {
        counters.refreshFailures += 1;
        // lru-cache keeps this very object as the stale value: the marks start its back-off.
        if (stale) {
          stale.refreshFailedAt = now();
          stale.retryAt = retryAtOf?.(error);
        }
        onLoadError?.(key, error);
        throw error;
      }
      if (value === undefined) {
        if (stale === undefined) return undefined;
        // lru-cache would put the stale value back: replace it with a short-lived tombstone.
        const time = now();
        fetchOptions.ttl = notFoundTtlMs;
        return { value: undefined, fetchedAt: time, staleAt: time + notFoundTtlMs, size: TOMBSTONE_BYTES };
      }
      const time = now();
      const fetchedAt = Math.min(time, fetchedAtOf?.(value) ?? time);
      // A copy fetched earlier (by another isolate) is fresh only for what is left of its TTL.
      if (fetchedAt < time) fetchOptions.ttl = Math.max(1, ttlMs - (time - fetchedAt));
      const staleAt = fetchedAt + ttlMs;
      // A loader hands back a copy already past its TTL when its source serves it stale: while
      // refreshing it (the shared tier's stale-while-revalidate) or because refreshing it failed
      // (stale-if-error). Either way this key is not loaded again for the back-off's length.
      onLoaded?.(key, value);
      const size = sizeOf(value);
      if (size > maxEntryBytes) onTooLarge?.(key, size, maxEntryBytes);
      return { value, fetchedAt, staleAt, size, refreshFailedAt: staleAt < time ? time : undefined };
    },
  });

  return {
    async read(key, load, waitUntil, readOptions = {}) {
      const { client, forceRefresh = false } = readOptions;
      let current = lru.peek(key, { allowStale: true });
      const time = now();
      if (current && !isWithinStaleIfError(current.staleAt, time, options)) {
        lru.delete(key);
        current = undefined;
      }
      const backingOff = current?.refreshFailedAt !== undefined && time - current.refreshFailedAt < REFRESH_FAILURE_BACKOFF_MS;
      const status: LRUCache.Status<string, Entry<V>, FetchContext<V>> = {};
      let entry: Entry<V> | undefined;
      // Its upstream calls are held off until `retryAt`: the stale copy answers, and nothing loads.
      const heldOff = current?.retryAt !== undefined && time < current.retryAt;
      try {
        entry = heldOff
          ? lru.get(key, { allowStale: true })
          : await lru.fetch(key, {
              context: { load, waitUntil, client },
              forceRefresh,
              allowStale:
                !forceRefresh && (current === undefined || isWithinStaleWhileRevalidate(current.staleAt, time, options) || backingOff),
              // Only with a stale copy to fall back on. Without one, lru-cache would resolve a failed
              // load to `undefined` for every caller but the first (who alone sees the error in its
              // status), and "failed" would read as "does not exist": this way the shared promise
              // rejects, so every waiter of one cold load gets the same error.
              allowStaleOnFetchRejection: current !== undefined,
              status,
            });
      } catch (error) {
        if (!abortReasons.has(error as object)) throw error;
        // The load found nothing and was overtaken meanwhile: lru-cache rejects its readers with
        // the abort's reason whatever `ignoreFetchAbort` says. What the key holds now answers (a
        // copy seeded meanwhile), else the load's own answer: it does not exist.
        entry = lru.get(key, { allowStale: false });
        if (entry !== undefined && !isFresh(entry.staleAt, now())) entry = undefined;
      }
      let state: CacheState;
      // Judged by the served entry itself: a request that joined a failing refresh, or a copy
      // another isolate stored long ago, is stale whatever path lru-cache took to return it.
      if (entry !== undefined && !isFresh(entry.staleAt, now())) {
        state = 'STALE';
        counters.staleServed += 1;
      } else if (status.fetch === 'hit') {
        state = 'HIT';
        counters.hits += 1;
      } else {
        state = 'MISS';
        counters.misses += 1;
      }
      metrics.cacheRead(state);
      return { value: entry?.value, state };
    },
    readFresh(key, answer) {
      // allowStale: false answers only what `read` would answer as a hit (by lru-cache's clock,
      // without a load in flight); the entry's own staleAt must agree, as `read` judges it.
      const entry = lru.get(key, { allowStale: false });
      if (entry?.value === undefined || !isFresh(entry.staleAt, now())) return undefined;
      const answered = answer(entry.value);
      if (answered !== undefined) {
        counters.hits += 1;
        metrics.cacheRead('HIT');
      }
      return answered;
    },
    has(key) {
      return lru.peek(key, { allowStale: true }) !== undefined;
    },
    seed(key, value) {
      const size = sizeOf(value);
      if (size > maxEntryBytes) return;
      const time = now();
      const fetchedAt = Math.min(time, fetchedAtOf?.(value) ?? time);
      const ttl = ttlMs - (time - fetchedAt);
      if (ttl <= 0) return;
      lru.set(key, { value, fetchedAt, staleAt: fetchedAt + ttlMs, size }, { ttl });
    },
    holds(key, value) {
      const entry = lru.peek(key, { allowStale: true });
      return entry !== undefined && entry.value === value && isFresh(entry.staleAt, now());
    },
    replace(key, current, next) {
      const entry = lru.peek(key, { allowStale: true });
      if (entry === undefined || entry.value !== current || !isFresh(entry.staleAt, now())) return false;
      const size = sizeOf(next);
      if (size > maxEntryBytes) return false;
      // The entry's own TTL goes on: lru-cache judges freshness by it.
      lru.set(key, { ...entry, value: next, size }, { noUpdateTTL: true });
      return true;
    },
    peek(key) {
      return lru.get(key, { allowStale: true })?.value;
    },
    stats() {
      return { ...counters, entries: lru.size, bytes: lru.calculatedSize };
    },
    clear() {
      lru.clear();
    },
  };
}

function noop(): void {}
