import type { Context } from 'hono';
import { parseIp, type AddressList } from './ip-address.js';

/**
 * The client IP behind `hops` trusted proxies. Each proxy appends the address it saw, so the
 * client is the `hops`-th entry from the right; everything left of it is whatever the client
 * chose to send and is never trusted. With no trusted hops the header is ignored.
 *
 * Fallbacks: fewer entries than hops means a proxy of the chain added none, so the leftmost
 * entry (the farthest address any proxy saw) is taken; no usable header at all gives the socket
 * address (then the nearest proxy itself, whose clients share one rate limit). Either way the
 * socket peer must be one of the trusted proxies: if clients can reach this port directly,
 * they can write the whole header, and TRUST_PROXY_HOPS must be 0.
 */
export function clientIpFromForwardedFor(
  forwardedFor: string | undefined,
  socketAddress: string | undefined,
  hops: number,
): string | undefined {
  const socket = socketAddress === undefined ? undefined : (parseIp(socketAddress) ?? socketAddress);
  if (hops <= 0 || !forwardedFor) return socket;
  const entries = forwardedFor
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
  if (entries.length === 0) return socket;
  // Fewer entries than trusted hops: take the farthest address our proxies passed on.
  const chosen = entries[Math.max(0, entries.length - hops)];
  // Never a string of the client's choosing: what is not an address counts as the socket's.
  return (chosen !== undefined && parseIp(chosen)) || socket;
}

/**
 * The client IP behind proxies known by address (TRUSTED_PROXIES), as Express's `trust proxy`
 * takes a list: `X-Forwarded-For` is read only when the socket peer is one of them, so a client
 * that reaches this port directly is counted by its own address whatever it writes. From the
 * right, each trusted entry is another proxy; the first untrusted one is the client. An entry
 * that is not an address ends the walk at the last proxy that wrote a real one.
 */
export function clientIpBehindTrustedProxies(
  forwardedFor: string | undefined,
  socketAddress: string | undefined,
  trusted: AddressList,
): string | undefined {
  const socket = socketAddress === undefined ? undefined : (parseIp(socketAddress) ?? socketAddress);
  if (socket === undefined || !forwardedFor || !trusted.includes(socket)) return socket;
  const entries = forwardedFor.split(',');
  let client = socket;
  for (let index = entries.length - 1; index >= 0; index -= 1) {
    const ip = parseIp(entries[index]!);
    if (ip === undefined) return client;
    client = ip;
    if (!trusted.includes(ip)) return ip;
  }
  return client;
}

/**
 * The Node entry's `clientIp`: `X-Forwarded-For` read behind the proxies of TRUSTED_PROXIES when
 * it is set, else behind TRUST_PROXY_HOPS hops, over the socket peer's address. `socketAddress`
 * is `getConnInfo(c).remote.address` in node.ts, passed in so this stays free of Node's server
 * and testable without sockets.
 */
export function createNodeClientIp(
  trustProxyHops: number,
  socketAddress: (c: Context) => string | undefined,
  trustedProxies?: AddressList,
) {
  if (trustedProxies) {
    return function clientIpByTrustedProxy(c: Context): string | undefined {
      return clientIpBehindTrustedProxies(c.req.header('x-forwarded-for'), socketAddress(c), trustedProxies);
    };
  }
  return function nodeClientIp(c: Context): string | undefined {
    return clientIpFromForwardedFor(c.req.header('x-forwarded-for'), socketAddress(c), trustProxyHops);
  };
}
