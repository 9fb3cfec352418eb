// The one place CACHE_MAX_BYTES is divided between the lru-caches of the public reads: 70 % upstream data (one entry at most half of it),
// 20 % rendered JSON pages, 5 % feeds, 5 % remembered 404s. Other in-memory maps are bounded by entry count.
export function splitMemoryBudget(maxBytes: number) {
  const notFound = Math.floor(maxBytes * 0.05);
  const renderedFeeds = Math.floor(maxBytes * 0.05);
  const renderedPages = Math.floor(maxBytes * 0.2);
  const upstreamData = maxBytes - renderedPages - renderedFeeds - notFound;
  return { upstreamData, upstreamDataEntry: Math.floor(upstreamData / 2), renderedPages, renderedFeeds, notFound };
}

/** Bytes a string may hold (two a character errs on the safe side). */
export function stringBytes(text: string): number {
  return 2 * text.length + 64;
}
