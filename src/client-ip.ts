/**
 * The client IP behind `hops` trusted proxies. Each proxy appends the address it saw, so the
 * client is the `hops`-th entry from the right; everything left of it is whatever the client
 * chose to send and is never trusted. With no trusted hops the header is ignored.
 */
export function clientIpFromForwardedFor(
  forwardedFor: string | undefined,
  socketAddress: string | undefined,
  hops: number,
): string | undefined {
  if (hops <= 0 || !forwardedFor) return socketAddress;
  const entries = forwardedFor
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
  if (entries.length === 0) return socketAddress;
  // Fewer entries than trusted hops: the leftmost was still written by one of our proxies.
  return entries[Math.max(0, entries.length - hops)];
}
