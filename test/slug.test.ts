import { describe, it, expect } from 'vitest';
import { SLUG_PATTERN, SLUG_RULE } from '../src/core/slug.js';

describe('the public slug rule', () => {
  it.each(['a', '7', 'what-to-sow_in-March', `a${'b'.repeat(198)}c`])('accepts %s', (slug) => {
    expect(SLUG_PATTERN.test(slug)).toBe(true);
  });

  it.each([
    ['an empty slug', ''],
    ['201 characters', 'a'.repeat(201)],
    ['a leading hyphen', '-a'],
    ['a trailing underscore', 'a_'],
    ['a dot', 'a.b'],
    ['a slash', 'a/b'],
    ['a non-ASCII letter', 'ä'],
    ['a trailing newline', 'a\n'],
  ])('refuses %s', (_label, slug) => {
    expect(SLUG_PATTERN.test(slug)).toBe(false);
  });

  it('is stated in words with the same bounds the pattern enforces', () => {
    expect(SLUG_RULE).toContain('1 to 200');
  });
});
