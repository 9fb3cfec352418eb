import { LRUCache } from 'lru-cache';
import { noopMetrics, type Metrics } from '../metrics.js';

/** Sent as `X-Cache`. */
export const CACHE_STATES = ['HIT', 'MISS', 'STALE'] as const;
export type CacheState = (typeof CACHE_STATES)[number];

export type WaitUntil = (promise: Promise<unknown>) => void;

/** What a load needs of the request a read serves, asked only when it loads: the request passes as is, so a hit builds nothing. */
export type Requester<R> = { waitUntil(request: R): WaitUntil | undefined; client(request: R): string | undefined };

export type MaybePromise<T> = T | Promise<T>;

export function andThen<T, R>(value: MaybePromise<T>, next: (value: T) => MaybePromise<R>): MaybePromise<R> {
  return value instanceof Promise ? value.then(next) : next(value);
}

/** `undefined`: "does not exist" (removes any stale copy); `previous`: the copy it replaces, if one is kept. */
export type Loader<V> = (key: string, waitUntil: WaitUntil | undefined, client?: string, previous?: V) => Promise<V | undefined>;

export type FreshnessRules = { ttlMs: number; staleWhileRevalidateMs: number; staleIfErrorMs: number };

export const isFresh = (staleAt: number, time: number) => time <= staleAt;
export const isWithinStaleWhileRevalidate = (staleAt: number, time: number, rules: FreshnessRules) =>
  time - staleAt <= rules.staleWhileRevalidateMs;
export const isWithinStaleIfError = (staleAt: number, time: number, rules: FreshnessRules) => time - staleAt <= rules.staleIfErrorMs;

// `fetchedAtOf`: when a value was fetched, if earlier (a shared copy); `maxEntryBytes`: a larger value is served, not kept;
// `retryAtOf`: when a failed load may be tried again (a hold-off's end); `onChange`: a copy was set, replaced or dropped.
export interface ReadThroughCacheOptions<V> {
  rulesFor: (key: string) => FreshnessRules;
  fetchedAtOf?: (value: V) => number | undefined;
  sizeOf: (value: V) => number;
  maxBytes: number;
  maxEntryBytes: number;
  notFoundTtlMs: number;
  now: () => number;
  onLoadError?: (key: string, error: unknown) => void;
  onLoaded?: (key: string, value: V) => void;
  retryAtOf?: (error: unknown) => number | undefined;
  onTooLarge?: (key: string, bytes: number, maxEntryBytes: number) => void;
  onChange?: () => void;
  metrics?: Pick<Metrics, 'cacheRead' | 'cacheEviction'>;
}

export type ReadResult<V> = { value: V | undefined; state: CacheState; staleAt?: number };

/** `value` undefined: a tombstone; before `retryAt` the stale copy is served without a load. */
type Entry<V> = { value: V | undefined; staleAt: number; size: number; refreshFailedAt?: number | undefined; retryAt?: number | undefined };

const TOMBSTONE_BYTES = 64;

/** After a failed refresh the stale copy is served at once for this long (never past `staleIfErrorMs`). */
export const REFRESH_FAILURE_BACKOFF_MS = 30_000;

/** One load per key at a time, stale-while-revalidate, stale-if-error (docs/contract.md "Caching"). */
export function createReadThroughCache<V>(options: ReadThroughCacheOptions<V>) {
  const { sizeOf, notFoundTtlMs, now, fetchedAtOf, rulesFor, maxEntryBytes, metrics = noopMetrics } = options;
  const counters = { hits: 0, misses: 0, staleServed: 0, refreshFailures: 0 };
  const lru = new LRUCache<string, Entry<V>>({
    maxSize: options.maxBytes,
    maxEntrySize: maxEntryBytes,
    sizeCalculation: (entry) => entry.size,
    dispose: (_entry, _key, reason) => void (options.onChange?.(), reason === 'evict' && metrics.cacheEviction(reason)),
  });
  // A key set or dropped meanwhile overtakes its load: the load's readers get what it loads, the cache does not.
  const loads = new Map<string, Promise<Entry<V> | undefined>>();

  function put(key: string, entry: Entry<V>): void {
    loads.delete(key);
    lru.set(key, entry);
    options.onChange?.();
  }

  // A value fetched earlier (by another isolate) is fresh only for what is left of its TTL.
  function entryOf(key: string, value: V): Entry<V> {
    const fetchedAt = Math.min(now(), fetchedAtOf?.(value) ?? now());
    return { value, staleAt: fetchedAt + rulesFor(key).ttlMs, size: sizeOf(value) };
  }

  function startLoad<R>(key: string, load: Loader<V>, request: R, requester: Requester<R> | undefined, stale?: Entry<V>) {
    const waitUntil = requester?.waitUntil(request);
    const loading = load(key, waitUntil, requester?.client(request), stale?.value);
    // On Workers the isolate may be frozen once the response is sent: keep refreshes alive.
    waitUntil?.(loading.then(noop, noop));
    const loaded = loading.then(
      (value) => {
        const time = now();
        let entry: Entry<V> | undefined;
        if (value !== undefined) {
          entry = entryOf(key, value);
          options.onLoaded?.(key, value);
          if (entry.size > maxEntryBytes) options.onTooLarge?.(key, entry.size, maxEntryBytes);
          // A copy handed back already stale (its source serves it so) is not loaded again for the back-off's length.
          if (entry.staleAt < time) entry.refreshFailedAt = time;
        } else if (stale !== undefined) {
          entry = { value: undefined, staleAt: time + notFoundTtlMs, size: TOMBSTONE_BYTES };
        }
        if (loads.get(key) === loaded) {
          if (entry === undefined) loads.delete(key);
          else put(key, entry);
        }
        return entry;
      },
      (error: unknown) => {
        if (loads.get(key) === loaded) loads.delete(key);
        counters.refreshFailures += 1;
        if (stale) Object.assign(stale, { refreshFailedAt: now(), retryAt: options.retryAtOf?.(error) });
        options.onLoadError?.(key, error);
        throw error;
      },
    );
    loaded.catch(noop);
    loads.set(key, loaded);
    return loaded;
  }

  async function readThrough<R>(key: string, load: Loader<V>, request: R, requester: Requester<R> | undefined, forceRefresh: boolean) {
    let current = lru.get(key);
    const time = now();
    const rules = rulesFor(key);
    if (current && !isWithinStaleIfError(current.staleAt, time, rules)) {
      loads.delete(key);
      lru.delete(key);
      current = undefined;
    }
    let entry = current;
    if (current?.retryAt === undefined || time >= current.retryAt) {
      const loading = loads.get(key) ?? startLoad(key, load, request, requester, current);
      const backingOff = current?.refreshFailedAt !== undefined && time - current.refreshFailedAt < REFRESH_FAILURE_BACKOFF_MS;
      const answersStale =
        current !== undefined && !forceRefresh && (isWithinStaleWhileRevalidate(current.staleAt, time, rules) || backingOff);
      if (!answersStale) entry = await (current === undefined ? loading : loading.catch(() => current));
    }
    const state: CacheState = entry !== undefined && !isFresh(entry.staleAt, now()) ? 'STALE' : 'MISS';
    counters[state === 'STALE' ? 'staleServed' : 'misses'] += 1;
    metrics.cacheRead(state);
    return { value: entry?.value, state };
  }

  function holds(key: string, value: V): boolean {
    const entry = lru.peek(key);
    return entry !== undefined && entry.value === value && isFresh(entry.staleAt, now());
  }

  return {
    /** `forceRefresh`: load anew even when the copy is fresh; the old copy only on failure. */
    read<R>(key: string, load: Loader<V>, request?: R, requester?: Requester<R>, forceRefresh = false): MaybePromise<ReadResult<V>> {
      if (!forceRefresh) {
        const entry = lru.get(key);
        if (entry !== undefined && isFresh(entry.staleAt, now())) {
          counters.hits += 1;
          metrics.cacheRead('HIT');
          return { value: entry.value, state: 'HIT', staleAt: entry.staleAt };
        }
      }
      return readThrough(key, load, request, requester, forceRefresh);
    },
    has: (key: string) => lru.peek(key) !== undefined,
    seed(key: string, value: V) {
      const entry = entryOf(key, value);
      if (entry.size <= maxEntryBytes && entry.staleAt > now()) put(key, entry);
    },
    holds,
    replace(key: string, current: V, next: V): boolean {
      const size = sizeOf(next);
      if (!holds(key, current) || size > maxEntryBytes) return false;
      put(key, { ...lru.peek(key)!, value: next, size });
      return true;
    },
    peek: (key: string) => lru.get(key)?.value,
    /** A fresh hit the caller answers from what it kept of the copy: counted, and the copy's recency renewed. */
    hit<A>(key: string, answer: A): A {
      lru.get(key);
      counters.hits += 1;
      metrics.cacheRead('HIT');
      return answer;
    },
    stats: () => ({ ...counters, entries: lru.size, bytes: lru.calculatedSize }),
  };
}

function noop(): void {}
