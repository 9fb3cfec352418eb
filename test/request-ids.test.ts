import { afterEach, describe, expect, it, vi } from 'vitest';
import { createRequestIds } from '../src/core/http/request-ids.js';

describe('createRequestIds', () => {
  afterEach(() => vi.restoreAllMocks());

  it('gives 32 hex digits per id, all different, across several batches', () => {
    const newRequestId = createRequestIds();
    const ids = Array.from({ length: 2500 }, () => newRequestId());
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{32}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('draws the random bytes of a whole batch at once, and only when the batch is used up', () => {
    const draw = vi.spyOn(crypto, 'getRandomValues');
    const newRequestId = createRequestIds();
    expect(draw).not.toHaveBeenCalled();
    for (let i = 0; i < 1024; i += 1) newRequestId();
    expect(draw).toHaveBeenCalledTimes(1);
    expect((draw.mock.calls[0]![0] as Uint8Array).byteLength).toBe(1024 * 16);
    newRequestId();
    expect(draw).toHaveBeenCalledTimes(2);
  });

  it('writes each random byte as its two hex digits, in order', () => {
    vi.spyOn(crypto, 'getRandomValues').mockImplementation(<T extends ArrayBufferView | null>(array: T): T => {
      const bytes = array as unknown as Uint8Array;
      bytes.forEach((_, i) => {
        bytes[i] = i;
      });
      return array;
    });
    const newRequestId = createRequestIds();
    expect(newRequestId()).toBe('000102030405060708090a0b0c0d0e0f');
    expect(newRequestId()).toBe('101112131415161718191a1b1c1d1e1f');
  });
});
