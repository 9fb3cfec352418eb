import type { Context } from 'hono';

// No leading zeros: `010.0.0.1` is octal to some parsers, so it (and `127.1`, `0x7f.0.0.1`) is refused.
const IPV4 = /^(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?:\.(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

/** One spelling (RFC 5952; IPv4-mapped as IPv4), so a rate limit counts a visitor once; accepts `[v6]:port`, `v4:port`, a zone. */
export function parseIp(text: string): string | undefined {
  const withPort = /^\[([^\]]+)\](?::\d{1,5})?$|^([\d.]+):\d{1,5}$/.exec(text.trim());
  const value = withPort ? (withPort[1] ?? withPort[2]!) : text.trim();
  if (IPV4.test(value)) return value;
  const address = ipv6Number(value.replace(/%[\w.-]{1,64}$/, ''));
  if (address === undefined) return undefined;
  if (address >> 32n === 0xffffn) return [24n, 16n, 8n, 0n].map((shift) => (address >> shift) & 0xffn).join('.');
  return ipv6Text(address);
}

function ipv6Number(value: string): bigint | undefined {
  if (!value.includes(':') || !/^[\da-f:.]{2,45}$/i.test(value)) return undefined;
  const host = URL.parse(`http://[${value}]`)?.hostname.slice(1, -1);
  if (host === undefined) return undefined;
  const [head = [], tail = []] = host.split('::').map((groups) => (groups === '' ? [] : groups.split(':')));
  const groups = [...head, ...new Array<string>(8 - head.length - tail.length).fill('0'), ...tail];
  return groups.reduce((number, group) => (number << 16n) | BigInt(`0x${group}`), 0n);
}

function ipv6Text(address: bigint): string {
  const groups = Array.from({ length: 8 }, (_, index) => ((address >> BigInt(112 - 16 * index)) & 0xffffn).toString(16));
  return new URL(`http://[${groups.join(':')}]`).hostname.slice(1, -1);
}

function numberOf(canonical: string): { value: bigint; width: number } {
  if (canonical.includes(':')) return { value: ipv6Number(canonical)!, width: 128 };
  return { value: canonical.split('.').reduce((number, byte) => (number << 8n) | BigInt(byte), 0n), width: 32 };
}

/** IPv6 by its RATE_LIMIT_IPV6_PREFIX network: one home line gets a whole /64. */
export function rateLimitKeyOf(ip: string, ipv6PrefixBits: number): string {
  const canonical = parseIp(ip);
  if (canonical === undefined || !canonical.includes(':')) return canonical ?? ip;
  const hostBits = BigInt(128 - ipv6PrefixBits);
  return `${ipv6Text((ipv6Number(canonical)! >> hostBits) << hostBits)}/${ipv6PrefixBits}`;
}

const NAMED_RANGES: Readonly<Record<string, readonly string[]>> = {
  loopback: ['127.0.0.0/8', '::1/128'],
  linklocal: ['169.254.0.0/16', 'fe80::/10'],
  uniquelocal: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'],
};

export type AddressList = ReturnType<typeof parseAddressList>['list'];

export function parseAddressList(text: string) {
  const networks: { width: number; hostBits: bigint; prefix: bigint }[] = [];
  const invalid: string[] = [];
  const entries = text.split(',').map((entry) => entry.trim());
  for (const entry of entries.filter(Boolean).flatMap((entry) => NAMED_RANGES[entry.toLowerCase()] ?? [entry])) {
    const [address = '', bitsText, ...rest] = entry.split('/');
    const canonical = parseIp(address);
    const width = canonical?.includes(':') ? 128 : 32;
    const bits = bitsText === undefined ? width : /^\d{1,3}$/.test(bitsText) ? Number(bitsText) : Number.NaN;
    if (canonical === undefined || rest.length > 0 || !(bits >= 0 && bits <= width)) {
      invalid.push(entry);
      continue;
    }
    const hostBits = BigInt(width - bits);
    networks.push({ width, hostBits, prefix: numberOf(canonical).value >> hostBits });
  }
  const includes = (ip: string): boolean => {
    const canonical = parseIp(ip);
    if (canonical === undefined) return false;
    const { value, width } = numberOf(canonical);
    return networks.some((network) => network.width === width && value >> network.hostBits === network.prefix);
  };
  return { list: { includes }, invalid };
}

export function clientIpOf(forwardedFor: string | undefined, socketAddress: string | undefined, trust: number | AddressList) {
  const socket = socketAddress === undefined ? undefined : (parseIp(socketAddress) ?? socketAddress);
  if (typeof trust === 'number') {
    if (trust <= 0 || !forwardedFor) return socket;
    const entries = forwardedFor.split(',').filter((entry) => entry.trim() !== '');
    // Fewer entries than hops: the farthest one our proxies passed on; what is not an address counts as the socket.
    const chosen = entries[Math.max(0, entries.length - trust)];
    return (chosen !== undefined && parseIp(chosen)) || socket;
  }
  // As Express's `trust proxy` list: from the right, the first untrusted entry; one not an address ends the walk.
  if (socket === undefined || !forwardedFor || !trust.includes(socket)) return socket;
  let client = socket;
  for (const entry of forwardedFor.split(',').reverse()) {
    const ip = parseIp(entry);
    if (ip === undefined) return client;
    client = ip;
    if (!trust.includes(ip)) return ip;
  }
  return client;
}

export function createNodeClientIp(trustProxyHops: number, socketAddress: (c: Context) => string | undefined, trusted?: AddressList) {
  return (c: Context) => clientIpOf(c.req.header('x-forwarded-for'), socketAddress(c), trusted ?? trustProxyHops);
}
