import { describe, expect, it } from 'vitest';
import { createReadThroughCache } from '../../src/core/reads/read-through-cache.js';
import { createFakeClock } from '../helpers.js';
import { createMetricsRecorder } from '../metrics-recorder.js';

function createCache(maxBytes: number) {
  const clock = createFakeClock();
  const recorder = createMetricsRecorder();
  const cache = createReadThroughCache<string>({
    sizeOf: (value) => value.length,
    maxBytes,
    maxEntryBytes: maxBytes / 2,
    rulesFor: () => ({ ttlMs: 60_000, staleWhileRevalidateMs: 300_000, staleIfErrorMs: 86_400_000 }),
    notFoundTtlMs: 30_000,
    now: clock.now,
    metrics: recorder.metrics,
  });
  const read = (key: string) => cache.read(key, async () => `${key}`.padEnd(40, '.'));
  return { read, clock, ...recorder };
}

describe('read-through cache metrics', () => {
  it('reports every read as HIT, MISS or STALE, as X-Cache says', async () => {
    const { read, clock, of } = createCache(10_000);
    await read('a');
    await read('a');
    clock.advance(61_000);
    await read('a');
    expect(of('cacheRead')).toEqual([['MISS'], ['HIT'], ['STALE']]);
  });

  it('reports an entry pushed out by the byte budget as an eviction, and nothing for a replaced one', async () => {
    const { read, clock, of } = createCache(100);
    await read('a');
    await read('b');
    expect(of('cacheEviction')).toEqual([]);
    await read('c');
    expect(of('cacheEviction')).toEqual([['evict']]);
    // A refresh replaces the value: not an eviction.
    clock.advance(61_000);
    await read('c');
    expect(of('cacheEviction')).toEqual([['evict']]);
  });
});
