import { getConnInfo } from '@hono/node-server/conninfo';
import { Hono, type Context } from 'hono';
import { describe, it, expect } from 'vitest';
import { clientIpOf, createNodeClientIp, parseAddressList } from '../src/core/http/ip-address.js';

const SOCKET = '198.51.100.20';

describe('clientIpOf with a hop count (TRUST_PROXY_HOPS)', () => {
  it('ignores X-Forwarded-For entirely when no proxy hop is trusted, so a spoofed header has no effect', () => {
    expect(clientIpOf('6.6.6.6', SOCKET, 0)).toBe(SOCKET);
    expect(clientIpOf('6.6.6.6, 7.7.7.7, 203.0.113.9', SOCKET, 0)).toBe(SOCKET);
  });

  it('treats a negative hop count like zero', () => {
    expect(clientIpOf('6.6.6.6', SOCKET, -1)).toBe(SOCKET);
  });

  it('takes the rightmost entry with one trusted hop, ignoring whatever the client put on the left', () => {
    expect(clientIpOf('6.6.6.6, 203.0.113.9', SOCKET, 1)).toBe('203.0.113.9');
  });

  it('takes the second entry from the right with two trusted hops', () => {
    expect(clientIpOf('6.6.6.6, 203.0.113.9, 10.0.0.2', SOCKET, 2)).toBe('203.0.113.9');
  });

  it('takes the only entry with one trusted hop', () => {
    expect(clientIpOf('203.0.113.9', SOCKET, 1)).toBe('203.0.113.9');
  });

  it('takes the leftmost entry when there are fewer entries than trusted hops', () => {
    expect(clientIpOf('203.0.113.9, 10.0.0.2', SOCKET, 3)).toBe('203.0.113.9');
    expect(clientIpOf('203.0.113.9', SOCKET, 10)).toBe('203.0.113.9');
  });

  it('trims spaces and skips empty entries between commas', () => {
    expect(clientIpOf(' 6.6.6.6 ,, 203.0.113.9 ,  ,10.0.0.2 ', SOCKET, 2)).toBe('203.0.113.9');
  });

  it('keeps IPv6 entries whole', () => {
    expect(clientIpOf('2001:db8::1, 2001:db8::2', SOCKET, 1)).toBe('2001:db8::2');
  });

  it('writes the chosen entry in its one spelling', () => {
    expect(clientIpOf('::ffff:203.0.113.9', SOCKET, 1)).toBe('203.0.113.9');
    expect(clientIpOf('2001:0DB8::0001', SOCKET, 1)).toBe('2001:db8::1');
    expect(clientIpOf('[2001:db8::1]:443', SOCKET, 1)).toBe('2001:db8::1');
  });

  it.each(['evil', '203.000.113.009', '999.1.1.1', 'unknown', '2001:db8::g'])(
    'falls back to the socket address for the unparseable entry %j, never to the string itself',
    (entry) => {
      expect(clientIpOf(`6.6.6.6, ${entry}`, SOCKET, 1)).toBe(SOCKET);
    },
  );

  it('writes an IPv4-mapped socket address as its IPv4 address', () => {
    expect(clientIpOf(undefined, '::ffff:127.0.0.1', 0)).toBe('127.0.0.1');
  });

  it.each([
    ['a missing header', undefined],
    ['an empty header', ''],
    ['a whitespace-only header', '   '],
    ['a header of only commas and spaces', ' , ,, '],
  ])('falls back to the socket address for %s', (_label, header) => {
    expect(clientIpOf(header, SOCKET, 1)).toBe(SOCKET);
  });

  it('returns undefined when there is neither a usable header nor a socket address', () => {
    expect(clientIpOf(undefined, undefined, 1)).toBeUndefined();
    expect(clientIpOf('6.6.6.6', undefined, 0)).toBeUndefined();
  });
});

describe('createNodeClientIp', () => {
  /** The socket address as node.ts reads it: @hono/node-server's bindings, no real socket. */
  const socketOfNodeServer = (c: Context) => getConnInfo(c).remote.address;

  /** Asks a fresh app which client IP the Node wiring sees for one request. */
  async function seenIp(trustProxyHops: number, forwardedFor?: string, socket = SOCKET): Promise<string> {
    const clientIp = createNodeClientIp(trustProxyHops, socketOfNodeServer);
    const app = new Hono().get('/', (c) => c.text(clientIp(c) ?? '(none)'));
    const headers: Record<string, string> = forwardedFor === undefined ? {} : { 'X-Forwarded-For': forwardedFor };
    const bindings = { incoming: { socket: { remoteAddress: socket, remotePort: 50_000, remoteFamily: 'IPv4' } } };
    return (await app.request('/', { headers }, bindings)).text();
  }

  it('uses the socket address and ignores a spoofed X-Forwarded-For with 0 trusted hops', async () => {
    expect(await seenIp(0, '6.6.6.6')).toBe(SOCKET);
    expect(await seenIp(0, '6.6.6.6, 203.0.113.9')).toBe(SOCKET);
  });

  it('uses the socket address when no X-Forwarded-For is sent', async () => {
    expect(await seenIp(0)).toBe(SOCKET);
    expect(await seenIp(1)).toBe(SOCKET);
  });

  it('uses the right-most X-Forwarded-For entry with 1 trusted hop', async () => {
    expect(await seenIp(1, '6.6.6.6, 203.0.113.9')).toBe('203.0.113.9');
  });

  it('uses the second entry from the right with 2 trusted hops', async () => {
    expect(await seenIp(2, '6.6.6.6, 203.0.113.9, 10.0.0.2')).toBe('203.0.113.9');
  });

  it('falls back to the leftmost entry when there are fewer entries than trusted hops', async () => {
    expect(await seenIp(2, '203.0.113.9')).toBe('203.0.113.9');
  });

  it('falls back to the socket address when X-Forwarded-For holds no entry', async () => {
    expect(await seenIp(1, ' , ')).toBe(SOCKET);
  });
});

describe('clientIpOf with a trusted list (TRUSTED_PROXIES)', () => {
  const trusted = parseAddressList('10.0.0.0/8, 2001:db8::/32').list;

  it('ignores X-Forwarded-For from a peer that is not a trusted proxy, so a direct client cannot rotate addresses', () => {
    expect(clientIpOf('6.6.6.6', SOCKET, trusted)).toBe(SOCKET);
    expect(clientIpOf('6.6.6.6, 10.0.0.2', SOCKET, trusted)).toBe(SOCKET);
  });

  it('skips trusted proxies from the right and takes the first address that is not one', () => {
    expect(clientIpOf('6.6.6.6, 203.0.113.9', '10.0.0.1', trusted)).toBe('203.0.113.9');
    expect(clientIpOf('6.6.6.6, 203.0.113.9, 10.1.1.1, 2001:db8::5', '10.0.0.1', trusted)).toBe('203.0.113.9');
    expect(clientIpOf('203.0.113.9', '::ffff:10.0.0.1', trusted)).toBe('203.0.113.9');
  });

  it('stops at the last proxy when an entry is not an address, and takes the leftmost when every entry is a proxy', () => {
    expect(clientIpOf('6.6.6.6, evil, 10.1.1.1', '10.0.0.1', trusted)).toBe('10.1.1.1');
    expect(clientIpOf('10.2.2.2, 10.1.1.1', '10.0.0.1', trusted)).toBe('10.2.2.2');
    expect(clientIpOf(undefined, '10.0.0.1', trusted)).toBe('10.0.0.1');
  });

  it('is what createNodeClientIp uses when the list is given, whatever the hop count', async () => {
    const clientIp = createNodeClientIp(0, () => '10.0.0.1', trusted);
    const app = new Hono().get('/', (c) => c.text(clientIp(c) ?? 'none'));
    const response = await app.request('/', { headers: { 'X-Forwarded-For': '203.0.113.9' } });
    expect(await response.text()).toBe('203.0.113.9');
  });
});
