// The one place CACHE_MAX_BYTES is divided between the lru-caches of the public reads (docs/architecture.md "Caching").
export function splitMemoryBudget(maxBytes: number) {
  const notFound = Math.floor(maxBytes * 0.05);
  const renderedFeeds = Math.floor(maxBytes * 0.05);
  const renderedPages = Math.floor(maxBytes * 0.2);
  const upstreamData = maxBytes - renderedPages - renderedFeeds - notFound;
  return { upstreamData, upstreamDataEntry: Math.floor(upstreamData / 2), renderedPages, renderedFeeds, notFound };
}

export function stringBytes(text: string): number {
  return 2 * text.length + 64;
}
