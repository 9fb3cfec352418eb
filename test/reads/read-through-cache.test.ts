import { describe, expect, it } from 'vitest';
import {
  createReadThroughCache,
  isFresh,
  isWithinStaleIfError,
  isWithinStaleWhileRevalidate,
  REFRESH_FAILURE_BACKOFF_MS,
  type Loader,
  type ReadThroughCacheOptions,
  type Requester,
  type WaitUntil,
} from '../../src/core/reads/read-through-cache.js';
import { createFakeClock } from '../helpers.js';

type FakeClock = ReturnType<typeof createFakeClock>;

const TTL = 60_000;
const SWR = 300_000;
const SIE = 86_400_000;
const NOT_FOUND_TTL = 45_000;

/** A request that is its own `waitUntil`. */
const byWaitUntil: Requester<WaitUntil | undefined> = { waitUntil: (waitUntil) => waitUntil, client: () => undefined };

/** A loader whose answers the test scripts, with a log of every load. */
function createLoader() {
  const loads: string[] = [];
  let version = 1;
  let failure: Error | undefined;
  let pending: { resolve: () => void } | undefined;
  const load = async (key: string): Promise<string | undefined> => {
    loads.push(key);
    if (pending) await new Promise<void>((resolve) => (pending = { resolve }));
    if (failure) throw failure;
    if (key.startsWith('missing')) return undefined;
    return `${key}@v${version}`;
  };
  return {
    load,
    loads,
    bump: () => (version += 1),
    fail: (error: Error | undefined) => (failure = error),
    hold: () => (pending = { resolve: () => undefined }),
    release: () => {
      const current = pending;
      pending = undefined;
      current?.resolve();
    },
  };
}

/** A cache whose reads all pass the scripted loader (or `load`, when a test gives its own). */
function createCache(overrides: Partial<ReadThroughCacheOptions<string>> = {}, load?: (clock: FakeClock) => Loader<string>) {
  const clock = createFakeClock();
  const loader = createLoader();
  const readLoader = load?.(clock) ?? loader.load;
  const readThrough = createReadThroughCache<string>({
    sizeOf: (value) => value.length,
    maxBytes: 10_000,
    maxEntryBytes: 5_000,
    rulesFor: () => ({ ttlMs: TTL, staleWhileRevalidateMs: SWR, staleIfErrorMs: SIE }),
    notFoundTtlMs: NOT_FOUND_TTL,
    now: clock.now,
    ...overrides,
  });
  const cache = {
    read: (key: string, waitUntil?: WaitUntil) => readThrough.read(key, readLoader, waitUntil, byWaitUntil),
    stats: () => readThrough.stats(),
  };
  return { cache, clock, loader, readThrough };
}

/** Lets queued promise callbacks (a background refresh) run to completion. */
async function settle(): Promise<void> {
  for (let i = 0; i < 10; i += 1) await Promise.resolve();
}

describe('read-through cache', () => {
  it('answers a second read within the TTL from memory without loading again', async () => {
    const { cache, clock, loader } = createCache();
    const loadedAt = clock.now();
    expect(await cache.read('a')).toEqual({ value: 'a@v1', state: 'MISS' });
    clock.advance(TTL - 1);
    // A hit says until when it is fresh.
    expect(await cache.read('a')).toEqual({ value: 'a@v1', state: 'HIT', staleAt: loadedAt + TTL });
    expect(loader.loads).toEqual(['a']);
    expect(cache.stats()).toMatchObject({ hits: 1, misses: 1, entries: 1 });
  });

  it('answers a fresh copy at once, not as a promise, and a stale or missing one as a promise', async () => {
    const { cache, clock } = createCache();
    const first = cache.read('a');
    expect(first).toBeInstanceOf(Promise);
    await first;
    expect(cache.read('a')).toEqual({ value: 'a@v1', state: 'HIT', staleAt: expect.any(Number) });
    clock.advance(TTL + 1);
    const stale = cache.read('a');
    expect(stale).toBeInstanceOf(Promise);
    expect(await stale).toEqual({ value: 'a@v1', state: 'STALE' });
  });

  it('asks who a read is for only when it loads', async () => {
    const { readThrough } = createCache();
    const asked: string[] = [];
    const visitor = () => (asked.push('asked'), '203.0.113.9');
    const clients: (string | undefined)[] = [];
    const load: Loader<string> = async (_key, _waitUntil, client) => (clients.push(client), 'value');
    const requester = { waitUntil: () => undefined, client: visitor };
    await readThrough.read('a', load, undefined, requester);
    readThrough.read('a', load, undefined, requester);
    expect(asked).toEqual(['asked']);
    expect(clients).toEqual(['203.0.113.9']);
  });

  it('loads each key with the loader its read passes, so one cache holds values of different kinds', async () => {
    const { readThrough } = createCache();
    const calls: string[] = [];
    const fromA: Loader<string> = async (key) => (calls.push(`A:${key}`), 'from A');
    const fromB: Loader<string> = async (key) => (calls.push(`B:${key}`), 'from B');
    expect(await readThrough.read('one', fromA)).toEqual({ value: 'from A', state: 'MISS' });
    expect(await readThrough.read('two', fromB)).toEqual({ value: 'from B', state: 'MISS' });
    expect(await readThrough.read('one', fromA)).toEqual({ value: 'from A', state: 'HIT', staleAt: expect.any(Number) });
    expect(calls).toEqual(['A:one', 'B:two']);
  });

  it("hands the read's waitUntil to its loader", async () => {
    const { readThrough } = createCache();
    const given: (WaitUntil | undefined)[] = [];
    const waitUntil: WaitUntil = () => undefined;
    await readThrough.read('a', async (_key, received) => (given.push(received), 'a'), waitUntil, byWaitUntil);
    expect(given).toEqual([waitUntil]);
  });

  it('makes one load for 100 concurrent misses of one key', async () => {
    const { cache, loader } = createCache();
    loader.hold();
    const reads = Array.from({ length: 100 }, () => cache.read('a'));
    await settle();
    loader.release();
    const results = await Promise.all(reads);
    expect(loader.loads).toEqual(['a']);
    expect(new Set(results.map((result) => result.value))).toEqual(new Set(['a@v1']));
  });

  it('serves the stale value at once after the TTL and refreshes it once in the background', async () => {
    const { cache, clock, loader } = createCache();
    await cache.read('a');
    loader.bump();
    clock.advance(TTL + 1);
    loader.hold();
    const first = await cache.read('a');
    const second = await cache.read('a');
    expect(first).toEqual({ value: 'a@v1', state: 'STALE' });
    expect(second).toEqual({ value: 'a@v1', state: 'STALE' });
    loader.release();
    await settle();
    expect(loader.loads).toEqual(['a', 'a']);
    expect(await cache.read('a')).toEqual({ value: 'a@v2', state: 'HIT', staleAt: expect.any(Number) });
  });

  it('hands the background refresh to waitUntil so a Worker keeps it alive', async () => {
    const { cache, clock } = createCache();
    await cache.read('a');
    clock.advance(TTL + 1);
    const kept: Promise<unknown>[] = [];
    await cache.read('a', (promise) => kept.push(promise));
    expect(kept).toHaveLength(1);
    await expect(kept[0]).resolves.toBeUndefined();
  });

  it.each([
    ['a 500', new Error('upstream failed (500)')],
    ['a timeout', Object.assign(new Error('timed out'), { name: 'TimeoutError' })],
    ['garbage', new Error('body is not JSON')],
  ])('keeps serving the stale value while refreshes fail with %s, up to the stale-if-error limit', async (_label, error) => {
    const { cache, clock, loader } = createCache();
    await cache.read('a');
    loader.fail(error);

    clock.advance(TTL + 1);
    expect(await cache.read('a')).toEqual({ value: 'a@v1', state: 'STALE' });
    await settle();

    // Past the stale-while-revalidate window the refresh is awaited, and its failure still serves stale.
    clock.advance(SWR + 1000);
    expect(await cache.read('a')).toEqual({ value: 'a@v1', state: 'STALE' });

    clock.advance(SIE - SWR - 10_000);
    expect(await cache.read('a')).toEqual({ value: 'a@v1', state: 'STALE' });

    // Beyond a day past its freshness the copy is dropped and the failure surfaces.
    clock.advance(20_000);
    await expect(cache.read('a')).rejects.toBe(error);
    expect(cache.stats().entries).toBe(0);
    expect(cache.stats().refreshFailures).toBeGreaterThanOrEqual(4);
  });

  it('rejects a cold read whose load fails and caches nothing', async () => {
    const { cache, loader } = createCache();
    const error = new Error('upstream down');
    loader.fail(error);
    await expect(cache.read('a')).rejects.toBe(error);
    expect(cache.stats().entries).toBe(0);
    loader.fail(undefined);
    expect(await cache.read('a')).toEqual({ value: 'a@v1', state: 'MISS' });
    expect(loader.loads).toEqual(['a', 'a']);
  });

  it.each([3, 50])('rejects all %i concurrent readers of a failed cold load with its error, after one load', async (readers) => {
    const { cache, loader } = createCache();
    const error = new Error('upstream down');
    loader.fail(error);
    loader.hold();
    const reads = Array.from({ length: readers }, () => cache.read('a'));
    await settle();
    loader.release();
    const outcomes = await Promise.allSettled(reads);
    expect(outcomes).toEqual(Array.from({ length: readers }, () => ({ status: 'rejected', reason: error })));
    expect(loader.loads).toEqual(['a']);
    expect(cache.stats()).toMatchObject({ entries: 0, refreshFailures: 1 });

    loader.fail(undefined);
    expect(await cache.read('a')).toEqual({ value: 'a@v1', state: 'MISS' });
  });

  it('tells every concurrent reader of a value that does not exist "undefined", not an error', async () => {
    const { cache, loader } = createCache();
    loader.hold();
    const reads = Array.from({ length: 3 }, () => cache.read('missing-1'));
    await settle();
    loader.release();
    expect(await Promise.all(reads)).toEqual(Array.from({ length: 3 }, () => ({ value: undefined, state: 'MISS' })));
    expect(loader.loads).toEqual(['missing-1']);
  });

  it('labels every reader that joins a failing refresh past the stale-while-revalidate window STALE, and counts each', async () => {
    const { cache, clock, loader } = createCache();
    await cache.read('a');
    loader.fail(new Error('upstream down'));
    clock.advance(TTL + SWR + 1000);
    loader.hold();
    const first = cache.read('a');
    const joiner = cache.read('a');
    await settle();
    loader.release();
    expect(await first).toEqual({ value: 'a@v1', state: 'STALE' });
    expect(await joiner).toEqual({ value: 'a@v1', state: 'STALE' });
    expect(loader.loads).toEqual(['a', 'a']);
    expect(cache.stats()).toMatchObject({ misses: 1, hits: 0, staleServed: 2, refreshFailures: 1 });
  });

  it('labels a value its loader fetched longer ago than the TTL (a shared copy) STALE, and one within it MISS', async () => {
    const { cache } = createCache(
      { fetchedAtOf: (value) => Number(value.split('@')[1]) },
      (clock) => async (key) => `${key}@${clock.now() - (key === 'old' ? TTL + 10_000 : 10_000)}`,
    );
    expect((await cache.read('old')).state).toBe('STALE');
    expect((await cache.read('recent')).state).toBe('MISS');
    expect((await cache.read('recent')).state).toBe('HIT');
    expect(cache.stats()).toMatchObject({ staleServed: 1, misses: 1, hits: 1 });
  });

  it('after a refresh fails, answers from the stale value at once for the back-off, with one background refresh at a time', async () => {
    const { cache, clock, loader } = createCache();
    await cache.read('a');
    loader.fail(new Error('upstream down'));
    clock.advance(TTL + SWR + 1000);
    // The first reader past the window waits for the refresh to fail, then gets the stale value.
    expect(await cache.read('a')).toEqual({ value: 'a@v1', state: 'STALE' });
    expect(loader.loads).toHaveLength(2);

    clock.advance(REFRESH_FAILURE_BACKOFF_MS - 1000);
    loader.hold();
    const answered: unknown[] = [];
    for (let i = 0; i < 5; i += 1) void Promise.resolve(cache.read('a')).then((result) => answered.push(result));
    await settle();
    // All five answered while the refresh they started is still waiting on the upstream.
    expect(answered).toEqual(Array.from({ length: 5 }, () => ({ value: 'a@v1', state: 'STALE' })));
    expect(loader.loads).toHaveLength(3);
    loader.release();
    await settle();
    expect(cache.stats().refreshFailures).toBe(2);
  });

  it('waits for the upstream again once a back-off has passed with no refresh failing', async () => {
    const { cache, clock, loader } = createCache();
    await cache.read('a');
    loader.fail(new Error('upstream down'));
    clock.advance(TTL + SWR + 1000);
    await cache.read('a');

    clock.advance(REFRESH_FAILURE_BACKOFF_MS + 1);
    loader.hold();
    let answered = false;
    const read = Promise.resolve(cache.read('a')).then((result) => {
      answered = true;
      return result;
    });
    await settle();
    expect(answered).toBe(false);
    loader.fail(undefined);
    loader.release();
    expect(await read).toEqual({ value: 'a@v1', state: 'MISS' });
  });

  it('never serves a stale value past the stale-if-error limit, back-off or not', async () => {
    const { cache, clock, loader } = createCache();
    await cache.read('a');
    const error = new Error('upstream down');
    loader.fail(error);
    clock.advance(TTL + SIE - 1000);
    expect(await cache.read('a')).toEqual({ value: 'a@v1', state: 'STALE' });
    clock.advance(2000);
    await expect(cache.read('a')).rejects.toBe(error);
    expect(cache.stats().entries).toBe(0);
  });

  it('returns undefined for a value that does not exist and stores nothing', async () => {
    const { cache } = createCache();
    expect(await cache.read('missing-1')).toEqual({ value: undefined, state: 'MISS' });
    expect(cache.stats()).toMatchObject({ entries: 0, bytes: 0 });
  });

  it('replaces a stale value with a tombstone when its source says it is gone, for the configured not-found TTL', async () => {
    const loads: number[] = [];
    const { cache, clock } = createCache({}, (clock) => async (key) => {
      loads.push(clock.now());
      return clock.now() > 1_700_000_000_000 + TTL ? undefined : `${key}@v1`;
    });
    expect((await cache.read('a')).value).toBe('a@v1');
    clock.advance(TTL + SWR + 1);
    expect((await cache.read('a')).value).toBeUndefined();
    expect(loads).toHaveLength(2);

    // NOT_FOUND_TTL (45 s) is longer than the 30 s once hard-coded: the tombstone answers alone.
    clock.advance(NOT_FOUND_TTL - 1000);
    expect(await cache.read('a')).toEqual({ value: undefined, state: 'HIT', staleAt: expect.any(Number) });
    expect(loads).toHaveLength(2);

    clock.advance(2000);
    await cache.read('a');
    await settle();
    expect(loads).toHaveLength(3);
  });

  it('never holds more bytes than its bound, however many keys are read', async () => {
    const { cache } = createCache({ maxBytes: 5_000, maxEntryBytes: 2_500 });
    for (let i = 0; i < 20_000; i += 1) {
      await cache.read(`key-${i}`);
      const { bytes } = cache.stats();
      if (bytes > 5_000) throw new Error(`bound exceeded after ${i} keys: ${bytes}`);
    }
    expect(cache.stats().bytes).toBeLessThanOrEqual(5_000);
    expect(cache.stats().entries).toBeLessThan(1_000);
  });

  // lru-cache aborts a load in flight when its key is set, deleted or evicted; our loads run on
  // regardless, so every reader waiting on one gets what it loaded (never lru-cache's abort reason).
  it('answers a cold read with its load when the key is seeded while the load is in flight', async () => {
    const { cache, loader, readThrough } = createCache();
    loader.hold();
    const pending = cache.read('a');
    const joined = cache.read('a');
    await settle();
    readThrough.seed('a', 'a@seeded');
    loader.release();
    expect(await pending).toEqual({ value: 'a@v1', state: 'MISS' });
    expect(await joined).toEqual({ value: 'a@v1', state: 'MISS' });
    // The seeded copy stays: the load that was overtaken does not write over it.
    expect(await cache.read('a')).toEqual({ value: 'a@seeded', state: 'HIT', staleAt: expect.any(Number) });
    expect(loader.loads).toEqual(['a']);
  });

  it('replaces a copy only while it is still the fresh one kept, keeping its freshness', async () => {
    const { cache, clock, readThrough } = createCache();
    await cache.read('a');
    // Another value than the one kept: nothing changes.
    expect(readThrough.replace('a', 'a@v0', 'a@other')).toBe(false);
    clock.advance(TTL / 2);
    expect(readThrough.replace('a', 'a@v1', 'a@v1+copies')).toBe(true);
    expect(await cache.read('a')).toEqual({ value: 'a@v1+copies', state: 'HIT', staleAt: expect.any(Number) });
    // Stale from the first load's time, not from the replacement's.
    clock.advance(TTL / 2 + 1);
    expect(readThrough.replace('a', 'a@v1+copies', 'a@late')).toBe(false);
    expect((await cache.read('a')).state).toBe('STALE');
    // A key not kept is not made.
    expect(readThrough.replace('b', 'b@v1', 'b@v2')).toBe(false);
    expect(readThrough.has('b')).toBe(false);
  });

  it('keeps a replaced copy on its own TTL to the millisecond: stale then, and refreshed', async () => {
    const { cache, clock, loader, readThrough } = createCache();
    await cache.read('a');
    clock.advance(TTL);
    expect(readThrough.holds('a', 'a@v1')).toBe(true);
    expect(readThrough.replace('a', 'a@v1', 'a@v1+copies')).toBe(true);
    clock.advance(1);
    expect(readThrough.holds('a', 'a@v1+copies')).toBe(false);
    loader.bump();
    expect(await cache.read('a')).toEqual({ value: 'a@v1+copies', state: 'STALE' });
    await settle();
    expect(await cache.read('a')).toEqual({ value: 'a@v2', state: 'HIT', staleAt: expect.any(Number) });
    expect(loader.loads).toEqual(['a', 'a']);
  });

  it.each([
    { key: 'a', answer: 'a@v1', what: 'what it loaded' },
    { key: 'missing-a', answer: undefined, what: '"does not exist" when it found nothing' },
  ])('answers a cold read whose load in flight is evicted by other keys with $what', async ({ key, answer }) => {
    const { cache, loader, readThrough } = createCache({ maxBytes: 12, maxEntryBytes: 6 });
    loader.hold();
    const pending = cache.read(key);
    await settle();
    for (const other of ['b', 'c', 'd', 'e']) readThrough.seed(other, `${other}@v1`);
    loader.release();
    expect(await pending).toEqual({ value: answer, state: 'MISS' });
  });

  it('answers a cold read that finds nothing, overtaken by a seed at any moment around its end, without an error', async () => {
    // lru-cache checks for an abort a few microtasks after the load resolved: a seed in that
    // window must not turn "does not exist" into lru-cache's "replaced".
    for (let delay = 0; delay <= 4; delay += 1) {
      const { cache, loader, readThrough } = createCache();
      loader.hold();
      const pending = cache.read(`missing-${delay}`);
      await settle();
      loader.release();
      let turns = delay;
      const seedLater = () => (turns-- === 0 ? readThrough.seed(`missing-${delay}`, 'seeded') : queueMicrotask(seedLater));
      seedLater();
      const answer = await pending;
      expect([undefined, 'seeded'], `seeded after ${delay} microtasks`).toContain(answer.value);
      expect(answer.state).toBe('MISS');
    }
  });

  it('never serves a copy past stale-if-error from a refresh that a later read overtook', async () => {
    const { readThrough, clock } = createCache();
    const held: { key: string; resolve: (value: string) => void }[] = [];
    const load: Loader<string> = (key) => new Promise((resolve) => held.push({ key, resolve }));
    const loaded = (version: string) => (key: string) => Promise.resolve(`${key}@${version}`);
    await readThrough.read('a', loaded('v1'));
    // Past stale-while-revalidate, within stale-if-error: the read waits for its refresh.
    clock.advance(TTL + SWR + 1);
    const first = readThrough.read('a', load);
    await settle();
    expect(held).toHaveLength(1);
    // Now past stale-if-error: the next read drops the old copy, which aborts the refresh in flight.
    clock.advance(SIE);
    const second = readThrough.read('a', loaded('v3'));
    held[0]!.resolve('a@v2');
    expect(await first).toEqual({ value: 'a@v2', state: 'MISS' });
    expect(await second).toEqual({ value: 'a@v3', state: 'MISS' });
  });

  it('does not store a value larger than the per-entry cap', async () => {
    const { cache, loader } = createCache({ maxBytes: 10_000, maxEntryBytes: 3 });
    await cache.read('a');
    await cache.read('a');
    expect(loader.loads).toEqual(['a', 'a']);
    expect(cache.stats().entries).toBe(0);
  });
});

describe('freshness rules', () => {
  const rules = { ttlMs: TTL, staleWhileRevalidateMs: SWR, staleIfErrorMs: SIE };
  const staleAt = 1_700_000_000_000 + TTL;

  it('counts a value fresh up to and including the moment its TTL ends', () => {
    expect(isFresh(staleAt, staleAt)).toBe(true);
    expect(isFresh(staleAt, staleAt + 1)).toBe(false);
  });

  it('allows serving a stale value while revalidating up to stale-while-revalidate past its TTL', () => {
    expect(isWithinStaleWhileRevalidate(staleAt, staleAt + SWR, rules)).toBe(true);
    expect(isWithinStaleWhileRevalidate(staleAt, staleAt + SWR + 1, rules)).toBe(false);
  });

  it('allows serving a stale value on error up to stale-if-error past its TTL', () => {
    expect(isWithinStaleIfError(staleAt, staleAt + SIE, rules)).toBe(true);
    expect(isWithinStaleIfError(staleAt, staleAt + SIE + 1, rules)).toBe(false);
  });
});
