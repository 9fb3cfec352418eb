import type { FreshnessRules } from './read-through-cache.js';

/**
 * How long one kind of answer is fresh, and how long past that a stale copy may still be served:
 * the in-memory cache, the shared tier and `Cache-Control` all read it from here
 * (docs/contract.md "Caching").
 */
export interface CachePolicy {
  /** Fresh for this long: served as it is, nothing loaded (`max-age`; 0: `no-cache`). */
  ttlSeconds: number;
  /** After that, a stale copy is served at once while one background refresh runs. */
  staleWhileRevalidateSeconds: number;
  /** After that, a stale copy is served only when a refresh fails, up to this long past the TTL. */
  staleIfErrorSeconds: number;
}

/** The cached answers: the three read routes (the archive's feeds share its policy) and the demo site's files. */
export interface CachePolicies {
  /** GET /api/issues, JSON and feeds: the archive index every page is cut from. */
  archive: CachePolicy;
  /** GET /api/issues/:slug. */
  issue: CachePolicy;
  /** GET /api/categories. */
  categories: CachePolicy;
  /** Demo mode's pages and config.js: checked again on every visit (an ETag makes that a 304), so an edit shows at once. */
  sitePage: CachePolicy;
  /** Demo mode's scripts, styles and pictures. */
  siteFile: CachePolicy;
}

/** A stale read is served while it is refreshed for five minutes, and while the upstream fails for a day. */
const STALE_WHILE_REVALIDATE_SECONDS = 300;
const STALE_IF_ERROR_SECONDS = 86_400;

/** The demo site's files, the same whatever the configuration. */
export const SITE_POLICIES: Pick<CachePolicies, 'sitePage' | 'siteFile'> = {
  sitePage: { ttlSeconds: 0, staleWhileRevalidateSeconds: 0, staleIfErrorSeconds: 0 },
  siteFile: { ttlSeconds: 300, staleWhileRevalidateSeconds: 0, staleIfErrorSeconds: 0 },
};

/**
 * The one table of cache policies. Issues and the archive are fresh for CACHE_TTL_SECONDS;
 * categories for CATEGORIES_TTL_SECONDS (CACHE_TTL_SECONDS unless set): they change when an
 * editor adds one, far less often than issues are sent.
 */
export function cachePolicies(config: { cacheTtlSeconds: number; categoriesTtlSeconds: number }): CachePolicies {
  const read = (ttlSeconds: number): CachePolicy => ({
    ttlSeconds,
    staleWhileRevalidateSeconds: STALE_WHILE_REVALIDATE_SECONDS,
    staleIfErrorSeconds: STALE_IF_ERROR_SECONDS,
  });
  return {
    archive: read(config.cacheTtlSeconds),
    issue: read(config.cacheTtlSeconds),
    categories: read(config.categoriesTtlSeconds),
    ...SITE_POLICIES,
  };
}

/** `Cache-Control` of an answer under `policy`: the only place it is written. */
export function cacheControlOf(policy: CachePolicy): string {
  if (policy.ttlSeconds === 0) return 'no-cache';
  let value = `public, max-age=${policy.ttlSeconds}`;
  if (policy.staleWhileRevalidateSeconds > 0) value += `, stale-while-revalidate=${policy.staleWhileRevalidateSeconds}`;
  if (policy.staleIfErrorSeconds > 0) value += `, stale-if-error=${policy.staleIfErrorSeconds}`;
  return value;
}

/** `Cache-Control` of answers no cache may keep: errors, subscribe, the admin listener's. */
export const NO_STORE = 'no-store';

/** The read-through cache's rules of a policy, in milliseconds. */
export function freshnessRulesOf(policy: CachePolicy): FreshnessRules {
  return {
    ttlMs: policy.ttlSeconds * 1000,
    staleWhileRevalidateMs: policy.staleWhileRevalidateSeconds * 1000,
    staleIfErrorMs: policy.staleIfErrorSeconds * 1000,
  };
}

/** How long a shared tier (Redis, the Workers Cache API) keeps a copy: as long as any read may still serve one. */
export function sharedTierMaxAgeSeconds(policies: CachePolicies): number {
  const reads = [policies.archive, policies.issue, policies.categories];
  return Math.max(...reads.map((policy) => policy.ttlSeconds + policy.staleIfErrorSeconds));
}
