/** Plus the service's own when it serves pages (demo mode); never `Host`, which a client writes. */
export function createOriginPolicy(allowed: '*' | readonly string[], ownOrigins: readonly string[] = []) {
  const listed = new Set([...(allowed === '*' ? [] : allowed), ...ownOrigins]);
  return {
    anyOrigin: allowed === '*',
    isAllowed: (origin: string): boolean => allowed === '*' || listed.has(origin),
    granted: (origin: string | undefined) => (allowed === '*' ? '*' : origin && listed.has(origin) ? origin : undefined),
  };
}

export function listenOrigins(host: string, port: number): string[] {
  const loopback = ['localhost', '127.0.0.1', '[::1]'];
  const named = host.includes(':') ? `[${host}]` : host;
  const names = ['0.0.0.0', '[::]', '127.0.0.1', 'localhost', '[::1]'].includes(named) ? loopback : [named];
  return names.map((name) => new URL(`http://${name}:${port}`).origin);
}

export type OriginPolicy = ReturnType<typeof createOriginPolicy>;

export function parseHttpUrl(value: string | null | undefined): URL | undefined {
  const url = value ? URL.parse(value) : null;
  return url?.protocol === 'http:' || url?.protocol === 'https:' ? url : undefined;
}
