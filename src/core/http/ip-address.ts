/* One spelling per IP address, so a rate limit counts a visitor once however it is written. */

// No leading zeros: `010.0.0.1` is octal to some parsers, so it (and `127.1`, `0x7f.0.0.1`) is refused.
const IPV4 = /^(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?:\.(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

/** RFC 5952 form (an IPv4-mapped address as IPv4), or undefined; accepts `[v6]:port`, `v4:port`, a zone id. */
export function parseIp(text: string): string | undefined {
  let value = text.trim();
  const bracketed = /^\[([^\]]+)\](?::\d{1,5})?$/.exec(value);
  if (bracketed) value = bracketed[1]!;
  else if (/^[\d.]+:\d{1,5}$/.test(value)) value = value.slice(0, value.indexOf(':'));
  if (IPV4.test(value)) return value;
  const groups = parseIpv6Groups(value.replace(/%[\w.-]{1,64}$/, ''));
  if (!groups) return undefined;
  const isMapped = groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff;
  if (isMapped) return [groups[6]! >> 8, groups[6]! & 0xff, groups[7]! >> 8, groups[7]! & 0xff].join('.');
  return formatIpv6(groups);
}

/** WHATWG URL's IPv6 parser and serializer: RFC 4291's grammar, and RFC 5952's one spelling (lower-case, the longest zero run as `::`). */
function ipv6Text(value: string): string | undefined {
  if (!value.includes(':') || !/^[\da-f:.]{2,45}$/i.test(value)) return undefined;
  try {
    return new URL(`http://[${value}]`).hostname.slice(1, -1);
  } catch {
    return undefined;
  }
}

function formatIpv6(groups: readonly number[]): string {
  return ipv6Text(groups.map((group) => group.toString(16)).join(':'))!;
}

function parseIpv6Groups(value: string): number[] | undefined {
  const text = ipv6Text(value);
  if (text === undefined) return undefined;
  const [head = '', tail] = text.split('::');
  const part = (groups: string) => (groups === '' ? [] : groups.split(':').map((group) => Number.parseInt(group, 16)));
  const [first, last] = [part(head), part(tail ?? '')];
  return [...first, ...new Array<number>(8 - first.length - last.length).fill(0), ...last];
}

/** The address for IPv4; for IPv6 its RATE_LIMIT_IPV6_PREFIX network, since one home line gets a whole /64. */
export function rateLimitKeyOf(ip: string, ipv6PrefixBits: number): string {
  const canonical = parseIp(ip);
  if (canonical === undefined || !canonical.includes(':')) return canonical ?? ip;
  const masked = parseIpv6Groups(canonical)!.map((group, index) => {
    const bits = Math.min(16, Math.max(0, ipv6PrefixBits - index * 16));
    return bits === 0 ? 0 : group & ((0xffff << (16 - bits)) & 0xffff);
  });
  return `${formatIpv6(masked)}/${ipv6PrefixBits}`;
}

/** 16-bit groups (2 for IPv4, 8 for IPv6), so one prefix test serves both. */
function groupsOf(canonical: string): number[] {
  return canonical.includes(':') ? parseIpv6Groups(canonical)! : ipv4Groups(canonical);
}

function ipv4Groups(dotted: string): number[] {
  const [a, b, c, d] = dotted.split('.').map(Number) as [number, number, number, number];
  return [(a << 8) | b, (c << 8) | d];
}

function hasPrefix(address: readonly number[], network: readonly number[], bits: number): boolean {
  if (address.length !== network.length) return false;
  for (let index = 0; index < network.length && bits > 0; index += 1, bits -= 16) {
    const mask = bits >= 16 ? 0xffff : (0xffff << (16 - bits)) & 0xffff;
    if ((address[index]! & mask) !== (network[index]! & mask)) return false;
  }
  return true;
}

/** The names Express's `trust proxy` accepts, with the ranges they stand for. */
const NAMED_RANGES: Readonly<Record<string, readonly string[]>> = {
  loopback: ['127.0.0.0/8', '::1/128'],
  linklocal: ['169.254.0.0/16', 'fe80::/10'],
  uniquelocal: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'],
};

/** A set of addresses and networks, tested against any spelling of an address. */
export interface AddressList {
  includes(ip: string): boolean;
}

/** `TRUSTED_PROXIES`: addresses, CIDR networks and Express's names; `invalid` names the other entries. */
export function parseAddressList(text: string): { list: AddressList; invalid: string[] } {
  const networks: { groups: number[]; bits: number }[] = [];
  const invalid: string[] = [];
  const entries = text
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
  for (const entry of entries.flatMap((entry) => NAMED_RANGES[entry.toLowerCase()] ?? [entry])) {
    const [address = '', bitsText, ...rest] = entry.split('/');
    const canonical = parseIp(address);
    const width = canonical?.includes(':') ? 128 : 32;
    const bits = bitsText === undefined ? width : /^\d{1,3}$/.test(bitsText) ? Number(bitsText) : Number.NaN;
    if (canonical === undefined || rest.length > 0 || !(bits >= 0 && bits <= width)) invalid.push(entry);
    else networks.push({ groups: groupsOf(canonical), bits });
  }
  return {
    invalid,
    list: {
      includes(ip) {
        const canonical = parseIp(ip);
        if (canonical === undefined) return false;
        const groups = groupsOf(canonical);
        return networks.some((network) => hasPrefix(groups, network.groups, network.bits));
      },
    },
  };
}
