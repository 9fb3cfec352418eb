import { LRUCache } from 'lru-cache';
import { noopMetrics, type Metrics } from '../metrics.js';

/** How a read was answered, sent as `X-Cache`. */
export const CACHE_STATES = ['HIT', 'MISS', 'STALE'] as const;
export type CacheState = (typeof CACHE_STATES)[number];

/** Schedules work that must outlive the response (Workers' `waitUntil`; on Node it simply runs). */
export type WaitUntil = (promise: Promise<unknown>) => void;

/** The visitor's IP, asked only when a read loads (for the read budget). */
export type Visitor = () => string | undefined;

/** A value at once, or its promise: a fresh hit is answered without waiting. */
export type MaybePromise<T> = T | Promise<T>;

export function andThen<T, R>(value: MaybePromise<T>, next: (value: T) => MaybePromise<R>): MaybePromise<R> {
  return value instanceof Promise ? value.then(next) : next(value);
}

export type CacheStats = Record<'hits' | 'misses' | 'staleServed' | 'refreshFailures' | 'entries' | 'bytes', number>;

/** `undefined` means "does not exist" and removes any stale copy; `previous` is the copy it replaces, if one is kept. */
export type Loader<V> = (key: string, waitUntil: WaitUntil | undefined, client?: string, previous?: V) => Promise<V | undefined>;

/** `forceRefresh`: load anew even when the copy is fresh (joining a load under way); the old copy only on failure. */
export interface ReadOptions {
  client?: Visitor | undefined;
  forceRefresh?: boolean;
}

/** How long a value is fresh, then served stale while refreshing, then only when a refresh fails (docs/contract.md "Caching"). */
export interface FreshnessRules {
  ttlMs: number;
  staleWhileRevalidateMs: number;
  staleIfErrorMs: number;
}

/** `staleAt` is when the value was fetched + its TTL. */
export const isFresh = (staleAt: number, time: number) => time <= staleAt;
export const isWithinStaleWhileRevalidate = (staleAt: number, time: number, rules: FreshnessRules) =>
  time - staleAt <= rules.staleWhileRevalidateMs;
export const isWithinStaleIfError = (staleAt: number, time: number, rules: FreshnessRules) => time - staleAt <= rules.staleIfErrorMs;

export interface ReadThroughCacheOptions<V> extends FreshnessRules {
  /** The rules of a key fresh for another time than these (categories may be fresh longer). */
  rulesFor?: (key: string) => FreshnessRules;
  /** When a loaded value was fetched, if earlier than now (a copy from a shared tier). */
  fetchedAtOf?: (value: V) => number | undefined;
  sizeOf: (value: V) => number;
  maxBytes: number;
  /** Default: half of maxBytes. A larger value is served but not kept. */
  maxEntryBytes?: number;
  /** How long a tombstone (a stale value whose source said it is gone) answers "does not exist". */
  notFoundTtlMs: number;
  now: () => number;
  onLoadError?: (key: string, error: unknown) => void;
  onLoaded?: (key: string, value: V) => void;
  /** When a failed load may be tried again (a hold-off's end): until then the stale copy is served without a load. */
  retryAtOf?: (error: unknown) => number | undefined;
  onTooLarge?: (key: string, bytes: number, maxEntryBytes: number) => void;
  metrics?: Pick<Metrics, 'cacheRead' | 'cacheEviction'>;
}

export interface ReadResult<V> {
  value: V | undefined;
  state: CacheState;
}

/** `value` undefined: a tombstone. `refreshFailedAt` starts the back-off; before `retryAt` the stale copy is served without a load. */
interface Entry<V> {
  value: V | undefined;
  fetchedAt: number;
  staleAt: number;
  size: number;
  refreshFailedAt?: number | undefined;
  retryAt?: number | undefined;
}

type FetchContext<V> = { load: Loader<V>; waitUntil: WaitUntil | undefined; client: Visitor | undefined };

/** lru-cache's read options, one object for every read (the hot path). */
const FRESH_ONLY = { allowStale: false } as const;
const ANY_AGE = { allowStale: true } as const;
const TOMBSTONE_BYTES = 64;

/**
 * After a refresh of a key fails, its stale copy is served at once for this long instead of every
 * request waiting for the upstream to fail again; never past `staleIfErrorMs`.
 */
export const REFRESH_FAILURE_BACKOFF_MS = 30_000;

/**
 * A bounded read-through cache on lru-cache's `fetchMethod`, which gives single-flight,
 * stale-while-revalidate (`allowStale` + `noDeleteOnStaleGet`) and stale-if-error
 * (`allowStaleOnFetchRejection`). We add the time limit on staleness, the back-off after a failed
 * refresh and the HIT/MISS/STALE state (docs/contract.md "Caching").
 */
export function createReadThroughCache<V>(options: ReadThroughCacheOptions<V>) {
  const { sizeOf, notFoundTtlMs, now, fetchedAtOf, metrics = noopMetrics } = options;
  const rulesFor = options.rulesFor ?? (() => options);
  const maxEntryBytes = options.maxEntryBytes ?? Math.floor(options.maxBytes / 2);
  const counters = { hits: 0, misses: 0, staleServed: 0, refreshFailures: 0 };
  /** The reasons lru-cache gave when it aborted a load (key set, deleted or evicted meanwhile). */
  const abortReasons = new WeakSet<object>();

  /** A loaded value as an entry: one fetched earlier (by another isolate) is fresh only for what is left of its TTL. */
  function entryOf(key: string, value: V): Entry<V> & { ttl: number } {
    const time = now();
    const fetchedAt = Math.min(time, fetchedAtOf?.(value) ?? time);
    const keyTtlMs = rulesFor(key).ttlMs;
    return { value, fetchedAt, staleAt: fetchedAt + keyTtlMs, size: sizeOf(value), ttl: keyTtlMs - (time - fetchedAt) };
  }

  const lru: LRUCache<string, Entry<V>, FetchContext<V>> = new LRUCache<string, Entry<V>, FetchContext<V>>({
    maxSize: options.maxBytes,
    maxEntrySize: maxEntryBytes,
    sizeCalculation: (entry) => entry.size,
    ttl: options.ttlMs,
    perf: { now },
    // Staleness is checked against the injected clock on every read (no cached "now" timer).
    ttlResolution: 0,
    allowStale: true,
    noDeleteOnStaleGet: true,
    allowStaleOnFetchRejection: true,
    // lru-cache aborts a load in flight when its key is set, deleted or evicted, and would reject
    // its readers; our loads run on, so their readers get what was loaded (see `readThrough`).
    ignoreFetchAbort: true,
    dispose: (_entry, _key, reason) => (reason === 'evict' || reason === 'expire' ? metrics.cacheEviction(reason) : undefined),
    fetchMethod: async (key, stale, { context, options: fetchOptions, signal }) => {
      // A block, not an expression: workerd warns of a listener that returns a value.
      const noteAbort = () => {
        if (signal.reason instanceof Object) abortReasons.add(signal.reason);
      };
      signal.addEventListener('abort', noteAbort, { once: true });
      const loading = context.load(key, context.waitUntil, context.client?.(), stale?.value);
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
          stale.retryAt = options.retryAtOf?.(error);
        }
        options.onLoadError?.(key, error);
        throw error;
      }
      const time = now();
      if (value === undefined) {
        if (stale === undefined) return undefined;
        // lru-cache would put the stale value back: replace it with a short-lived tombstone.
        fetchOptions.ttl = notFoundTtlMs;
        return { value: undefined, fetchedAt: time, staleAt: time + notFoundTtlMs, size: TOMBSTONE_BYTES };
      }
      const { ttl, ...entry } = entryOf(key, value);
      fetchOptions.ttl = Math.max(1, ttl);
      options.onLoaded?.(key, value);
      if (entry.size > maxEntryBytes) options.onTooLarge?.(key, entry.size, maxEntryBytes);
      // A copy handed back already stale (its source serves it so) is not loaded again for the back-off's length.
      return { ...entry, refreshFailedAt: entry.staleAt < time ? time : undefined };
    },
  });

  async function readThrough(
    key: string,
    load: Loader<V>,
    waitUntil: WaitUntil | undefined,
    { client, forceRefresh = false }: ReadOptions,
  ) {
    let current = lru.peek(key, ANY_AGE);
    const time = now();
    const rules = rulesFor(key);
    if (current && !isWithinStaleIfError(current.staleAt, time, rules)) {
      lru.delete(key);
      current = undefined;
    }
    const backingOff = current?.refreshFailedAt !== undefined && time - current.refreshFailedAt < REFRESH_FAILURE_BACKOFF_MS;
    const status: LRUCache.Status<string, Entry<V>, FetchContext<V>> = {};
    let entry: Entry<V> | undefined;
    try {
      // Held off until `retryAt`: the stale copy answers, and nothing loads.
      entry =
        current?.retryAt !== undefined && time < current.retryAt
          ? lru.get(key, ANY_AGE)
          : await lru.fetch(key, {
              context: { load, waitUntil, client },
              forceRefresh,
              allowStale:
                !forceRefresh && (current === undefined || isWithinStaleWhileRevalidate(current.staleAt, time, rules) || backingOff),
              // Without a stale copy, lru-cache would resolve a failed load to `undefined` ("does not
              // exist") for every waiter but the first: this way they all get the error.
              allowStaleOnFetchRejection: current !== undefined,
              status,
            });
    } catch (error) {
      if (!abortReasons.has(error as object)) throw error;
      // The load found nothing and was overtaken meanwhile (lru-cache rejects with the abort's
      // reason): a copy seeded meanwhile answers, else it does not exist.
      entry = lru.get(key, FRESH_ONLY);
      if (entry !== undefined && !isFresh(entry.staleAt, now())) entry = undefined;
    }
    // Judged by the served entry itself, whatever path lru-cache took to return it.
    const state: CacheState = entry !== undefined && !isFresh(entry.staleAt, now()) ? 'STALE' : status.fetch === 'hit' ? 'HIT' : 'MISS';
    counters[state === 'STALE' ? 'staleServed' : state === 'HIT' ? 'hits' : 'misses'] += 1;
    metrics.cacheRead(state);
    return { value: entry?.value, state };
  }

  function holds(key: string, value: V): boolean {
    const entry = lru.peek(key, ANY_AGE);
    return entry !== undefined && entry.value === value && isFresh(entry.staleAt, now());
  }

  return {
    /** Loads with `load` when there is no fresh copy; concurrent reads share one load. A fresh copy is answered at once. */
    read(key: string, load: Loader<V>, waitUntil?: WaitUntil, readOptions: ReadOptions = {}): MaybePromise<ReadResult<V>> {
      if (readOptions.forceRefresh !== true) {
        // The entry's own staleAt must agree, as readThrough judges it.
        const entry = lru.get(key, FRESH_ONLY);
        if (entry !== undefined && isFresh(entry.staleAt, now())) {
          counters.hits += 1;
          metrics.cacheRead('HIT');
          return { value: entry.value, state: 'HIT' };
        }
      }
      return readThrough(key, load, waitUntil, readOptions);
    },
    /** Whether any copy of `key` is kept, fresh or stale (a tombstone counts). */
    has: (key: string) => lru.peek(key, ANY_AGE) !== undefined,
    /** Keeps `value` as if just loaded (a copy another read brought along), unless it is too large. */
    seed(key: string, value: V) {
      const { ttl, ...entry } = entryOf(key, value);
      if (entry.size <= maxEntryBytes && ttl > 0) lru.set(key, entry, { ttl });
    },
    holds,
    /** `next` in the place of `current` while that is the fresh copy (its compressed bodies added), as fresh; no hit counted. */
    replace(key: string, current: V, next: V): boolean {
      const size = sizeOf(next);
      if (!holds(key, current) || size > maxEntryBytes) return false;
      // The entry's own TTL goes on: lru-cache judges freshness by it.
      lru.set(key, { ...lru.peek(key, ANY_AGE)!, value: next, size }, { noUpdateTTL: true });
      return true;
    },
    /** The copy kept, fresh or stale, without loading or counting (it counts as used). */
    peek: (key: string) => lru.get(key, ANY_AGE)?.value,
    stats: (): CacheStats => ({ ...counters, entries: lru.size, bytes: lru.calculatedSize }),
  };
}

function noop(): void {}
