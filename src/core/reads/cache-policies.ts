import type { FreshnessRules } from './read-through-cache.js';

// Read by the in-memory cache, the shared tier and `Cache-Control` alike (docs/contract.md "Caching").
export type CachePolicy = { ttlSeconds: number; staleWhileRevalidateSeconds: number; staleIfErrorSeconds: number };

export type CachePolicies = ReturnType<typeof cachePolicies>;

/** A site page is checked again on every visit (an ETag makes that a 304), so an edit shows at once. */
export const SITE_POLICIES: Record<'sitePage' | 'siteFile', CachePolicy> = {
  sitePage: { ttlSeconds: 0, staleWhileRevalidateSeconds: 0, staleIfErrorSeconds: 0 },
  siteFile: { ttlSeconds: 300, staleWhileRevalidateSeconds: 0, staleIfErrorSeconds: 0 },
};

/** Categories change far less often than issues are sent: they may be fresh longer. */
export function cachePolicies(config: { cacheTtlSeconds: number; categoriesTtlSeconds: number }) {
  const read = (ttlSeconds: number): CachePolicy => ({ ttlSeconds, staleWhileRevalidateSeconds: 300, staleIfErrorSeconds: 86_400 });
  return { archive: read(config.cacheTtlSeconds), issue: read(config.cacheTtlSeconds), categories: read(config.categoriesTtlSeconds) };
}

export function cacheControlOf(policy: CachePolicy): string {
  if (policy.ttlSeconds === 0) return 'no-cache';
  let value = `public, max-age=${policy.ttlSeconds}`;
  if (policy.staleWhileRevalidateSeconds > 0) value += `, stale-while-revalidate=${policy.staleWhileRevalidateSeconds}`;
  if (policy.staleIfErrorSeconds > 0) value += `, stale-if-error=${policy.staleIfErrorSeconds}`;
  return value;
}

export const NO_STORE = 'no-store';

export const freshnessRulesOf = (policy: CachePolicy): FreshnessRules => ({
  ttlMs: policy.ttlSeconds * 1000,
  staleWhileRevalidateMs: policy.staleWhileRevalidateSeconds * 1000,
  staleIfErrorMs: policy.staleIfErrorSeconds * 1000,
});

export const sharedTierMaxAgeSeconds = ({ archive, issue, categories }: CachePolicies) =>
  Math.max(...[archive, issue, categories].map((policy) => policy.ttlSeconds + policy.staleIfErrorSeconds));

// The one place CACHE_MAX_BYTES is divided between the lru-caches of the public reads (docs/architecture.md "Caching").
export function splitMemoryBudget(maxBytes: number) {
  const notFound = Math.floor(maxBytes * 0.05);
  const renderedFeeds = Math.floor(maxBytes * 0.05);
  const renderedPages = Math.floor(maxBytes * 0.2);
  const upstreamData = maxBytes - renderedPages - renderedFeeds - notFound;
  return { upstreamData, upstreamDataEntry: Math.floor(upstreamData / 2), renderedPages, renderedFeeds, notFound };
}

export const stringBytes = (text: string) => 2 * text.length + 64;
