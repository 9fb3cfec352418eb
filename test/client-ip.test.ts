import { describe, it, expect } from 'vitest';
import { clientIpFromForwardedFor } from '../src/client-ip.js';

const SOCKET = '198.51.100.20';

describe('clientIpFromForwardedFor', () => {
  it('ignores X-Forwarded-For entirely when no proxy hop is trusted, so a spoofed header has no effect', () => {
    expect(clientIpFromForwardedFor('6.6.6.6', SOCKET, 0)).toBe(SOCKET);
    expect(clientIpFromForwardedFor('6.6.6.6, 7.7.7.7, 203.0.113.9', SOCKET, 0)).toBe(SOCKET);
  });

  it('treats a negative hop count like zero', () => {
    expect(clientIpFromForwardedFor('6.6.6.6', SOCKET, -1)).toBe(SOCKET);
  });

  it('takes the rightmost entry with one trusted hop, ignoring whatever the client put on the left', () => {
    expect(clientIpFromForwardedFor('6.6.6.6, 203.0.113.9', SOCKET, 1)).toBe('203.0.113.9');
  });

  it('takes the second entry from the right with two trusted hops', () => {
    expect(clientIpFromForwardedFor('6.6.6.6, 203.0.113.9, 10.0.0.2', SOCKET, 2)).toBe('203.0.113.9');
  });

  it('takes the only entry with one trusted hop', () => {
    expect(clientIpFromForwardedFor('203.0.113.9', SOCKET, 1)).toBe('203.0.113.9');
  });

  it('takes the leftmost entry when there are fewer entries than trusted hops', () => {
    expect(clientIpFromForwardedFor('203.0.113.9, 10.0.0.2', SOCKET, 3)).toBe('203.0.113.9');
    expect(clientIpFromForwardedFor('203.0.113.9', SOCKET, 10)).toBe('203.0.113.9');
  });

  it('trims spaces and skips empty entries between commas', () => {
    expect(clientIpFromForwardedFor(' 6.6.6.6 ,, 203.0.113.9 ,  ,10.0.0.2 ', SOCKET, 2)).toBe('203.0.113.9');
  });

  it('keeps IPv6 entries whole', () => {
    expect(clientIpFromForwardedFor('2001:db8::1, 2001:db8::2', SOCKET, 1)).toBe('2001:db8::2');
  });

  it.each([
    ['a missing header', undefined],
    ['an empty header', ''],
    ['a whitespace-only header', '   '],
    ['a header of only commas and spaces', ' , ,, '],
  ])('falls back to the socket address for %s', (_label, header) => {
    expect(clientIpFromForwardedFor(header, SOCKET, 1)).toBe(SOCKET);
  });

  it('returns undefined when there is neither a usable header nor a socket address', () => {
    expect(clientIpFromForwardedFor(undefined, undefined, 1)).toBeUndefined();
    expect(clientIpFromForwardedFor('6.6.6.6', undefined, 0)).toBeUndefined();
  });
});
