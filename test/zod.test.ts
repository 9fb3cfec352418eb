import { describe, it, expect } from 'vitest';
import * as z from '../src/core/zod.js';

describe('the configured zod/mini', () => {
  it('describes a value of the wrong type in English words, not just "Invalid input"', () => {
    const result = z.string().safeParse(42);
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.message).toBe('Invalid input: expected string, received number');
  });
});
