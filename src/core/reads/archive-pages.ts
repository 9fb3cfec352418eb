import { LRUCache } from 'lru-cache';
import type { ArchivePageBody, IssueSummary } from '../public-shapes.js';
import type { ArchiveRequest } from '../routes/archive-query.js';
import type { ArchiveIndex } from './cached-value.js';
import { renderJson, renderedBytes, type BodyEncoder, type RenderedJson } from './rendered-json.js';
import { addSummary, createTextStore, search, type TextIndex } from './text-index.js';

/**
 * The validated archive query (its parameters are written in routes/archive-query.ts), the
 * representation aside: every JSON page and feed is cut from the one index by it.
 */
export type ArchiveQuery = Omit<ArchiveRequest, 'format'>;

/** The key of one archive page among the rendered pages: validated parameters only. */
export function archivePageKey(query: ArchiveQuery): string {
  return `${query.limit}:${query.offset}:${query.category ?? ''}${query.q === undefined ? '' : `:${query.q}`}`;
}

/**
 * One page of the archive index (a category's issues when asked for; those matching a search, best
 * first, when `q` is given), with the list's total.
 */
export function archivePageOf(index: ArchiveIndex, query: ArchiveQuery): { issues: IssueSummary[]; total: number } {
  const listed = query.category === undefined ? index.all : (index.byCategory.get(query.category) ?? []);
  const list = query.q === undefined ? listed : search(textIndexOf(index), listed, query.q.split(' '));
  return { issues: list.slice(query.offset, query.offset + query.limit), total: list.length };
}

/** The offsets of the pages beside this one, `null` at the ends (docs/contract.md "GET /api/issues"). */
export function pageOffsets(query: ArchiveQuery, total: number): { nextOffset: number | null; previousOffset: number | null } {
  return {
    nextOffset: query.offset + query.limit < total ? query.offset + query.limit : null,
    previousOffset: query.offset > 0 ? Math.max(0, Math.min(query.offset, total) - query.limit) : null,
  };
}

/** Text indexes made from the summaries alone, for an index that came without one (an older shared copy). */
const summaryTextIndexes = new WeakMap<ArchiveIndex, TextIndex>();

function textIndexOf(index: ArchiveIndex): TextIndex {
  if (index.text !== undefined) return index.text;
  let text = summaryTextIndexes.get(index);
  if (text === undefined) {
    const store = createTextStore();
    const slots = new Map<string, number>();
    for (const summary of index.all)
      slots.set(summary.slug, addSummary(store, summary, index.sources.get(summary.slug)?.updatedAt ?? null));
    text = { store, slots };
    summaryTextIndexes.set(index, text);
  }
  return text;
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
    /** A page of this index already rendered, or undefined (always for a search: none is kept). */
    get(index: ArchiveIndex, query: ArchiveQuery): RenderedJson | undefined {
      if (query.q !== undefined) return undefined;
      const cached = pages.get(keyOf(query));
      return cached?.index === index ? cached.rendered : undefined;
    },
    /**
     * The page rendered now. A search's is neither kept nor compressed: queries are as many as
     * visitors can type, so keeping them would let anyone fill this cache (docs/contract.md "Search").
     */
    async render(index: ArchiveIndex, query: ArchiveQuery): Promise<RenderedJson> {
      const { issues, total } = archivePageOf(index, query);
      const meta = { total, limit: query.limit, offset: query.offset, ...pageOffsets(query, total) };
      const envelope: ArchivePageBody = { ok: true, data: issues, meta };
      if (query.q !== undefined) return renderJson(envelope);
      const rendered = await renderJson(envelope, encode);
      pages.set(keyOf(query), { index, rendered });
      return rendered;
    },
    stats: () => ({ renderedPages: pages.size, renderedPageBytes: pages.calculatedSize }),
  };
}
