import { describe, expect, it } from 'vitest';
import { splitMemoryBudget } from '../../src/core/reads/cache-policies.js';

const MIB = 1024 * 1024;

describe('splitMemoryBudget', () => {
  it.each([MIB, 64 * MIB + 7, 4096 * MIB])('gives the four read caches %i bytes at most in all', (maxBytes) => {
    const budget = splitMemoryBudget(maxBytes);
    expect(budget.upstreamData + budget.renderedPages + budget.renderedFeeds + budget.notFound).toBe(maxBytes);
  });

  it('gives 70 % to upstream data (half of it at most to one entry), 20 % to rendered JSON pages, 5 % to rendered feeds and 5 % to 404s', () => {
    expect(splitMemoryBudget(100 * MIB)).toEqual({
      upstreamData: 70 * MIB,
      upstreamDataEntry: 35 * MIB,
      renderedPages: 20 * MIB,
      renderedFeeds: 5 * MIB,
      notFound: 5 * MIB,
    });
  });
});
