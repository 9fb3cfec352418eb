import type { Context } from 'hono';
import { parseIp } from './ip-address.js';

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
 * The Node entry's `clientIp` (TRUST_PROXY_HOPS): `X-Forwarded-For` read behind the trusted
 * hops, over the socket peer's address. `socketAddress` is `getConnInfo(c).remote.address` in
 * node.ts, passed in so this stays free of Node's server and testable without sockets.
 */
export function createNodeClientIp(trustProxyHops: number, socketAddress: (c: Context) => string | undefined) {
  return function nodeClientIp(c: Context): string | undefined {
    return clientIpFromForwardedFor(c.req.header('x-forwarded-for'), socketAddress(c), trustProxyHops);
  };
}
