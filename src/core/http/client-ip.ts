import type { Context } from 'hono';
import { parseIp, type AddressList } from './ip-address.js';

/** The `hops`-th `X-Forwarded-For` entry from the right (further left are the client's own words). */
export function clientIpFromForwardedFor(forwardedFor: string | undefined, socketAddress: string | undefined, hops: number) {
  const socket = socketAddress === undefined ? undefined : (parseIp(socketAddress) ?? socketAddress);
  if (hops <= 0 || !forwardedFor) return socket;
  const entries = forwardedFor.split(',').filter((entry) => entry.trim() !== '');
  // Fewer entries than hops: the farthest one our proxies passed on; what is not an address counts as the socket.
  const chosen = entries[Math.max(0, entries.length - hops)];
  return (chosen !== undefined && parseIp(chosen)) || socket;
}

/** As Express's `trust proxy` list: from the right, the first untrusted entry; one not an address ends the walk. */
export function clientIpBehindTrustedProxies(forwardedFor: string | undefined, socketAddress: string | undefined, trusted: AddressList) {
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

export function createNodeClientIp(trustProxyHops: number, socketAddress: (c: Context) => string | undefined, trusted?: AddressList) {
  return (c: Context): string | undefined =>
    trusted
      ? clientIpBehindTrustedProxies(c.req.header('x-forwarded-for'), socketAddress(c), trusted)
      : clientIpFromForwardedFor(c.req.header('x-forwarded-for'), socketAddress(c), trustProxyHops);
}
