import { describe, expect, it } from 'vitest';
import {
  cacheControlOf,
  cachePolicies,
  freshnessRulesOf,
  SITE_POLICIES,
  sharedTierMaxAgeSeconds,
} from '../../src/core/reads/cache-policies.js';

describe('the cache policies', () => {
  const policies = cachePolicies({ cacheTtlSeconds: 60, categoriesTtlSeconds: 900 });

  it('writes each Cache-Control from its policy', () => {
    expect(cacheControlOf(policies.archive)).toBe('public, max-age=60, stale-while-revalidate=300, stale-if-error=86400');
    expect(cacheControlOf(policies.issue)).toBe('public, max-age=60, stale-while-revalidate=300, stale-if-error=86400');
    expect(cacheControlOf(policies.categories)).toBe('public, max-age=900, stale-while-revalidate=300, stale-if-error=86400');
    expect(cacheControlOf(SITE_POLICIES.sitePage)).toBe('no-cache');
    expect(cacheControlOf(SITE_POLICIES.siteFile)).toBe('public, max-age=300');
  });

  it('gives the read-through cache the same times in milliseconds', () => {
    expect(freshnessRulesOf(policies.categories)).toEqual({ ttlMs: 900_000, staleWhileRevalidateMs: 300_000, staleIfErrorMs: 86_400_000 });
  });

  it('keeps a shared copy as long as the longest-lived read may still serve one', () => {
    expect(sharedTierMaxAgeSeconds(policies)).toBe(900 + 86_400);
    expect(sharedTierMaxAgeSeconds(cachePolicies({ cacheTtlSeconds: 120, categoriesTtlSeconds: 60 }))).toBe(120 + 86_400);
  });
});
