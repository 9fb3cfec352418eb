import { describe, expect, it } from 'vitest';
import { ifNoneMatchMatches } from '../src/core/http/read-reply.js';

const ETAG = '"2mvBE6cUpU1hhtdFk7Oftb6m"';

describe('If-None-Match against a strong ETag (weak comparison, RFC 9110 §13.1.2)', () => {
  it.each([
    ['the ETag as sent', ETAG],
    ['its weak form', `W/${ETAG}`],
    ['a list naming it', `"other", ${ETAG}`],
    ['a list naming its weak form, no spaces', `"other",W/${ETAG}`],
    ['the ETag with spaces around', `  ${ETAG} `],
    ['*', '*'],
    ['* with spaces around', ' * '],
  ])('matches %s', (_label, header) => {
    expect(ifNoneMatchMatches(header, ETAG)).toBe(true);
  });

  it.each([
    ['no header', undefined],
    ['an empty header', ''],
    ['another ETag', '"other"'],
    ['the ETag unquoted', ETAG.slice(1, -1)],
    ['a list of others', '"a", "b"'],
  ])('does not match %s', (_label, header) => {
    expect(ifNoneMatchMatches(header, ETAG)).toBe(false);
  });
});
