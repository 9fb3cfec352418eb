/**
 * The one place CACHE_MAX_BYTES is divided. It bounds the four caches of the public reads
 * together: each is an lru-cache with `maxSize`, so their shares can never add up to more.
 * The other in-memory maps are bounded by entry count, not by this budget: the archive query
 * memo (routes/issues.ts), the recently-subscribed addresses (routes/subscribe.ts) and the
 * in-memory rate limiter's windows (core/http/rate-limit.ts).
 */
export interface ReadCacheBudget {
  /** The read-through cache of upstream data: the archive index, categories, issue bodies. */
  upstreamData: number;
  /** One entry of it at most: a larger one is served but not kept (it would evict the rest). */
  upstreamDataEntry: number;
  /** Serialized archive pages, memoised per index. */
  renderedPages: number;
  /** Rendered Atom and RSS feeds of the archive, memoised per index (reads/archive-feeds.ts). */
  renderedFeeds: number;
  /** Slugs the upstream said it does not have, kept apart so a slug scan cannot evict the rest. */
  notFound: number;
}

/**
 * 70 % upstream data, 25 % rendered archive pages (20 % JSON, 5 % feeds: fewer are asked for,
 * by feed readers polling a few addresses), 5 % remembered 404s.
 */
export function splitMemoryBudget(maxBytes: number): ReadCacheBudget {
  const notFound = Math.floor(maxBytes * 0.05);
  const renderedFeeds = Math.floor(maxBytes * 0.05);
  const renderedPages = Math.floor(maxBytes * 0.2);
  const upstreamData = maxBytes - renderedPages - renderedFeeds - notFound;
  return { upstreamData, upstreamDataEntry: Math.floor(upstreamData / 2), renderedPages, renderedFeeds, notFound };
}

/** Bytes a string may hold: JavaScript strings may take two bytes a character; this errs on the safe side. */
export function stringBytes(text: string): number {
  return 2 * text.length + 64;
}
