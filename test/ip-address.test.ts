import { describe, expect, it } from 'vitest';
import { parseIp, rateLimitKeyOf } from '../src/core/http/ip-address.js';

describe('parseIp', () => {
  it.each([
    ['203.0.113.9', '203.0.113.9'],
    [' 203.0.113.9 ', '203.0.113.9'],
    ['203.0.113.9:51000', '203.0.113.9'],
    ['0.0.0.0', '0.0.0.0'],
    ['2001:DB8::1', '2001:db8::1'],
    ['2001:0db8:0000:0000:0000:0000:0000:0001', '2001:db8::1'],
    ['[2001:db8::1]', '2001:db8::1'],
    ['[2001:db8::1]:443', '2001:db8::1'],
    ['fe80::1%eth0', 'fe80::1'],
    ['::', '::'],
    ['::1', '::1'],
    ['2001:db8:0:1:0:0:0:1', '2001:db8:0:1::1'],
    ['2001:db8:1:2:3:4:5:6', '2001:db8:1:2:3:4:5:6'],
  ])('writes %j as %j', (text, canonical) => {
    expect(parseIp(text)).toBe(canonical);
  });

  it.each(['::ffff:203.0.113.9', '::FFFF:203.0.113.9', '::ffff:cb00:7109', '0:0:0:0:0:ffff:cb00:7109', '[::ffff:203.0.113.9]:80'])(
    'reads the IPv4-mapped address %j as its IPv4 address',
    (text) => {
      expect(parseIp(text)).toBe('203.0.113.9');
    },
  );

  it.each([
    ['leading zeros', '203.000.113.009'],
    ['an octal-looking octet', '010.0.0.1'],
    ['a shortened quad', '127.1'],
    ['a hex octet', '0x7f.0.0.1'],
    ['a plain number', '2130706433'],
    ['an octet over 255', '256.0.0.1'],
    ['a name', 'localhost'],
    ['junk', 'not-an-ip'],
    ['an empty string', ''],
    ['two ::', '1::2::3'],
    ['nine groups', '1:2:3:4:5:6:7:8:9'],
    ['a five-digit group', '2001:db8::10000'],
    ['a :: standing for no group', '1:2:3:4::5:6:7:8'],
  ])('refuses %s (%j)', (_label, text) => {
    expect(parseIp(text)).toBeUndefined();
  });
});

describe('rateLimitKeyOf', () => {
  it('keeps an IPv4 address as it is', () => {
    expect(rateLimitKeyOf('203.0.113.9', 64)).toBe('203.0.113.9');
  });

  it('counts every address of one IPv6 /64 as one visitor', () => {
    const keys = new Set(
      ['2001:db8:1:2::1', '2001:db8:1:2:ffff:ffff:ffff:ffff', '2001:0DB8:0001:0002:abcd::9'].map((ip) => rateLimitKeyOf(ip, 64)),
    );
    expect([...keys]).toEqual(['2001:db8:1:2::/64']);
    expect(rateLimitKeyOf('2001:db8:1:3::1', 64)).toBe('2001:db8:1:3::/64');
  });

  it('uses the configured prefix length, down to the bit', () => {
    expect(rateLimitKeyOf('2001:db8:1:2ff::1', 56)).toBe('2001:db8:1:200::/56');
    expect(rateLimitKeyOf('2001:db8:1:2::1', 128)).toBe('2001:db8:1:2::1/128');
    expect(rateLimitKeyOf('2001:db8:abcd:2::1', 36)).toBe('2001:db8:a000::/36');
  });

  it('counts an IPv4-mapped IPv6 address as its IPv4 address', () => {
    expect(rateLimitKeyOf('::ffff:203.0.113.9', 64)).toBe('203.0.113.9');
  });

  it('keeps what is not an address as given (the runtime vouched for it)', () => {
    expect(rateLimitKeyOf('unknown', 64)).toBe('unknown');
  });
});
