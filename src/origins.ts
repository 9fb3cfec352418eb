/**
 * The browser origins this service answers (docs/contract.md `ALLOWED_ORIGINS`): the listed ones,
 * any with `*`, and always the service's own origin (a page it serves posting to itself).
 */
export function createOriginPolicy(allowed: '*' | readonly string[]) {
  const listed = new Set(allowed === '*' ? [] : allowed);
  return {
    isAllowed(origin: string, ownOrigin: string): boolean {
      return allowed === '*' || listed.has(origin) || origin === ownOrigin;
    },
  };
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
