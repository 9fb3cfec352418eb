/**
 * The browser origins this service answers (docs/contract.md `ALLOWED_ORIGINS`): the listed ones,
 * any with `*`, and `ownOrigins` — the service's own, given only when it serves pages (demo
 * mode). An origin is never taken from the request (`Host`, an absolute-form target): a client
 * writes those, so `Host: evil.example` with `Origin: http://evil.example` would allow itself.
 */
export function createOriginPolicy(allowed: '*' | readonly string[], ownOrigins: readonly string[] = []) {
  const listed = new Set([...(allowed === '*' ? [] : allowed), ...ownOrigins]);
  return {
    anyOrigin: allowed === '*',
    isAllowed(origin: string): boolean {
      return allowed === '*' || listed.has(origin);
    },
  };
}

/**
 * The origins a browser uses for a service listening on `host`:`port` (demo mode's pages):
 * the loopback names for a loopback or wildcard address, else the configured host itself.
 * Reached under any other name (a LAN address, a proxy), the site's origin goes in ALLOWED_ORIGINS.
 */
export function listenOrigins(host: string, port: number): string[] {
  const loopback = ['localhost', '127.0.0.1', '[::1]'];
  const named = host.includes(':') ? `[${host}]` : host;
  const names = ['0.0.0.0', '[::]', '127.0.0.1', 'localhost', '[::1]'].includes(named) ? loopback : [named];
  return names.map((name) => new URL(`http://${name}:${port}`).origin);
}

export type OriginPolicy = ReturnType<typeof createOriginPolicy>;

/** An absolute http(s) URL, or undefined for anything else (relative, `javascript:`, `data:`, junk). */
export function parseHttpUrl(value: string | null | undefined): URL | undefined {
  if (!value) return undefined;
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url : undefined;
  } catch {
    return undefined;
  }
}
