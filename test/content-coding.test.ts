import { describe, expect, it } from 'vitest';
import { createCopyChooser } from '../src/core/http/read-reply.js';
import type { EncodedCopy } from '../src/core/reads/rendered-json.js';

const br: EncodedCopy = { coding: 'br', body: new Uint8Array([1]), etag: '"x-br"' };
const gzip: EncodedCopy = { coding: 'gzip', body: new Uint8Array([2]), etag: '"x-gzip"' };
const both = [br, gzip];

describe('chooseCopy', () => {
  const chooseCopy = createCopyChooser();

  it.each([
    [undefined, undefined],
    ['', undefined],
    ['identity', undefined],
    ['gzip', 'gzip'],
    ['GZIP', 'gzip'],
    ['gzip, deflate, br', 'br'],
    ['br;q=0.5, gzip', 'gzip'],
    ['br;q=0, gzip;q=0', undefined],
    ['*', 'br'],
    ['*;q=0.5, br;q=0', 'gzip'],
    ['gzip;q=0.5, identity', undefined],
    ['gzip;q=0.5, identity;q=0', 'gzip'],
    ['br;q=1.0, gzip;q=0.999', 'br'],
    ['br;q=2, gzip', 'gzip'],
    ['br;q=abc', undefined],
    ['deflate', undefined],
    [' gzip ; q=0.8 ', 'gzip'],
  ])('answers Accept-Encoding %j with %s', (header, expected) => {
    expect(chooseCopy(header, both)?.coding).toBe(expected);
  });

  it('sends the body as it is when no copy is kept, whatever is asked', () => {
    expect(chooseCopy('br, gzip', undefined)).toBeUndefined();
    expect(chooseCopy('br, gzip', [])).toBeUndefined();
  });

  it('chooses among the copies kept: gzip alone when br did not pay', () => {
    expect(chooseCopy('br, gzip', [gzip])).toBe(gzip);
    expect(chooseCopy('br', [gzip])).toBeUndefined();
  });

  it('answers a header seen before as the first time, and headers past the remembered ones alike', () => {
    // Many distinct headers first, so that later ones are past what is remembered and parsed afresh.
    for (let i = 0; i < 100; i += 1) {
      const gzipWeight = `0.${String(i).padStart(3, '0')}`;
      expect(chooseCopy(`gzip;q=${gzipWeight}, br;q=0.05`, both)?.coding).toBe(Number(gzipWeight) > 0.05 ? 'gzip' : 'br');
    }
    for (const [header, expected] of [
      ['br;q=0.5, gzip', 'gzip'],
      ['gzip, deflate, br', 'br'],
      ['br;q=0, gzip;q=0', undefined],
    ] as const) {
      for (let round = 0; round < 3; round += 1) expect(chooseCopy(header, both)?.coding).toBe(expected);
      expect(chooseCopy(header, [gzip])?.coding).toBe(expected === undefined ? undefined : 'gzip');
    }
  });
});
