import { describe, expect, it } from 'vitest';
import type { Loader, WaitUntil } from '../../src/core/reads/read-through-cache.js';
import { withSharedTier } from '../../src/core/reads/shared-tier.js';
import { createFakeClock, createMemoryStore } from '../helpers.js';

const TTL = 60_000;
const SWR = 300_000;
const SIE = 86_400_000;
const RULES = { ttlMs: TTL, staleWhileRevalidateMs: SWR, staleIfErrorMs: SIE };

/** Values are `text@fetchedAt`; an entry whose payload does not start with "ok:" does not decode. */
function createTier() {
  const clock = createFakeClock();
  const { store, entries, fail } = createMemoryStore();
  const loads: string[] = [];
  const refreshErrors: unknown[] = [];
  let answer: () => string | undefined = () => 'fresh';
  const upstream: Loader<string> = async (key) => {
    loads.push(key);
    const text = answer();
    return text === undefined ? undefined : `${text}@${clock.now()}`;
  };
  const load = withSharedTier(upstream, {
    store,
    rules: RULES,
    now: clock.now,
    encode: (value) => ({ payload: `ok:${value.split('@')[0]}`, fetchedAt: Number(value.split('@')[1]) }),
    decode: (entry) => (entry.payload.startsWith('ok:') ? `${entry.payload.slice(3)}@${entry.fetchedAt}` : undefined),
    onRefreshError: (_key, error) => refreshErrors.push(error),
  });
  const background: Promise<unknown>[] = [];
  const waitUntil: WaitUntil = (promise) => void background.push(promise);
  const settle = async () => {
    for (let i = 0; i < 10 && background.length > 0; i += 1) await Promise.all(background.splice(0));
  };
  const answerWith = (next: () => string | undefined) => (answer = next);
  return { load, clock, entries, fail, loads, refreshErrors, waitUntil, settle, answerWith };
}

describe('shared tier around a loader', () => {
  it('stores what the loader loads and answers the next isolate from the tier while it is fresh', async () => {
    const tier = createTier();
    const fetchedAt = tier.clock.now();
    expect(await tier.load('k', tier.waitUntil)).toBe(`fresh@${fetchedAt}`);
    await tier.settle();
    expect(tier.entries.get('k')).toEqual({ payload: 'ok:fresh', fetchedAt });

    tier.clock.advance(TTL);
    expect(await tier.load('k', tier.waitUntil)).toBe(`fresh@${fetchedAt}`);
    expect(tier.loads).toEqual(['k']);
  });

  it('stores what the loader loads where there is no waitUntil (Node), as where there is one', async () => {
    const tier = createTier();
    const fetchedAt = tier.clock.now();
    expect(await tier.load('k', undefined)).toBe(`fresh@${fetchedAt}`);
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(tier.entries.get('k')).toEqual({ payload: 'ok:fresh', fetchedAt });
  });

  it('answers a copy within stale-while-revalidate at once and replaces it with one refresh behind the response', async () => {
    const tier = createTier();
    const fetchedAt = tier.clock.now();
    tier.entries.set('k', { payload: 'ok:old', fetchedAt });
    tier.clock.advance(TTL + SWR);
    tier.answerWith(() => 'new');
    expect(await tier.load('k', tier.waitUntil)).toBe(`old@${fetchedAt}`);
    await tier.settle();
    expect(tier.loads).toEqual(['k']);
    expect(tier.entries.get('k')).toEqual({ payload: 'ok:new', fetchedAt: tier.clock.now() });
  });

  it('still refreshes a copy within stale-while-revalidate where there is no waitUntil (Node)', async () => {
    const tier = createTier();
    tier.entries.set('k', { payload: 'ok:old', fetchedAt: tier.clock.now() });
    tier.clock.advance(TTL + 1);
    tier.answerWith(() => 'new');
    await tier.load('k', undefined);
    for (let i = 0; i < 10; i += 1) await Promise.resolve();
    expect(tier.loads).toEqual(['k']);
    expect(tier.entries.get('k')?.payload).toBe('ok:new');
  });

  it('removes the shared copy when the refresh finds the value gone', async () => {
    const tier = createTier();
    tier.entries.set('k', { payload: 'ok:old', fetchedAt: tier.clock.now() });
    tier.clock.advance(TTL + 1);
    tier.answerWith(() => undefined);
    await tier.load('k', tier.waitUntil);
    await tier.settle();
    expect(tier.entries.has('k')).toBe(false);
  });

  it('reports a failed refresh behind the response and keeps the shared copy', async () => {
    const tier = createTier();
    const error = new Error('upstream down');
    tier.entries.set('k', { payload: 'ok:old', fetchedAt: tier.clock.now() });
    tier.clock.advance(TTL + 1);
    tier.answerWith(() => {
      throw error;
    });
    await tier.load('k', tier.waitUntil);
    await tier.settle();
    expect(tier.refreshErrors).toEqual([error]);
    expect(tier.entries.get('k')?.payload).toBe('ok:old');
  });

  it('waits for the loader once the copy is past stale-while-revalidate', async () => {
    const tier = createTier();
    tier.entries.set('k', { payload: 'ok:old', fetchedAt: tier.clock.now() });
    tier.clock.advance(TTL + SWR + 1);
    expect(await tier.load('k', tier.waitUntil)).toBe(`fresh@${tier.clock.now()}`);
    expect(tier.loads).toEqual(['k']);
  });

  it('serves the copy when the loader fails within stale-if-error, and the error past it', async () => {
    const tier = createTier();
    const fetchedAt = tier.clock.now();
    const error = new Error('upstream down');
    tier.entries.set('k', { payload: 'ok:old', fetchedAt });
    tier.answerWith(() => {
      throw error;
    });
    tier.clock.advance(TTL + SIE);
    expect(await tier.load('k', tier.waitUntil)).toBe(`old@${fetchedAt}`);
    tier.clock.advance(1);
    await expect(tier.load('k', tier.waitUntil)).rejects.toBe(error);
  });

  it('treats an entry that does not decode as a miss: loads, and replaces it', async () => {
    const tier = createTier();
    tier.entries.set('k', { payload: 'garbage', fetchedAt: tier.clock.now() });
    expect(await tier.load('k', tier.waitUntil)).toBe(`fresh@${tier.clock.now()}`);
    await tier.settle();
    expect(tier.loads).toEqual(['k']);
    expect(tier.entries.get('k')?.payload).toBe('ok:fresh');
  });

  it('treats a store that fails to answer as a miss', async () => {
    const tier = createTier();
    tier.fail();
    expect(await tier.load('k', tier.waitUntil)).toBe(`fresh@${tier.clock.now()}`);
    expect(tier.loads).toEqual(['k']);
  });
});
