import { LRUCache } from 'lru-cache';
import type { ArchivePageBody, IssueSummary } from '../public-shapes.js';
import type { ArchiveRequest } from '../routes/archive-query.js';
import type { ArchiveIndex } from './cached-value.js';
import { renderJson, renderedBytes, type BodyEncoder, type RenderedJson } from './rendered-json.js';

/**
 * The validated archive query (its parameters are written in routes/archive-query.ts), the
 * representation aside: every JSON page and feed is cut from the one index by it.
 */
export type ArchiveQuery = Omit<ArchiveRequest, 'format'>;

/** The key of one archive page among the rendered pages: validated parameters only. */
export function archivePageKey(query: ArchiveQuery): string {
  return `${query.limit}:${query.offset}:${query.category ?? ''}`;
}

/** One page of the archive index (a category's issues when asked for), with the list's total. */
export function archivePageOf(index: ArchiveIndex, query: ArchiveQuery): { issues: IssueSummary[]; total: number } {
  const list = query.category === undefined ? index.all : (index.byCategory.get(query.category) ?? []);
  return { issues: list.slice(query.offset, query.offset + query.limit), total: list.length };
}

/**
 * The JSON pages of the archive, each rendered once per index (a new index makes every page
 * render afresh), within their share of CACHE_MAX_BYTES.
 */
export function createRenderedPages(maxBytes: number, encode?: BodyEncoder) {
  const pages = new LRUCache<string, { index: ArchiveIndex; rendered: RenderedJson }>({
    maxSize: maxBytes,
    sizeCalculation: (page) => renderedBytes(page.rendered),
  });
  /**
   * Each query's key, made once per query object: the routes' queries are remembered per query
   * string (archive-query.ts), so a cached page is found without building a string. A query
   * object is not changed once used (the routes' are frozen).
   */
  const keys = new WeakMap<ArchiveQuery, string>();
  const keyOf = (query: ArchiveQuery) => {
    let key = keys.get(query);
    if (key === undefined) keys.set(query, (key = archivePageKey(query)));
    return key;
  };
  return {
    /** A page of this index already rendered, or undefined. */
    get(index: ArchiveIndex, query: ArchiveQuery): RenderedJson | undefined {
      const cached = pages.get(keyOf(query));
      return cached?.index === index ? cached.rendered : undefined;
    },
    async render(index: ArchiveIndex, query: ArchiveQuery): Promise<RenderedJson> {
      const { issues, total } = archivePageOf(index, query);
      const envelope: ArchivePageBody = { ok: true, data: issues, meta: { total, limit: query.limit, offset: query.offset } };
      const rendered = await renderJson(envelope, encode);
      pages.set(keyOf(query), { index, rendered });
      return rendered;
    },
    stats: () => ({ renderedPages: pages.size, renderedPageBytes: pages.calculatedSize }),
  };
}
