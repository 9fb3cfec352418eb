import { LRUCache } from 'lru-cache';
import type { ArchivePageBody, IssueSummary } from '../public-shapes.js';
import type { ArchiveRequest } from '../routes/archive-query.js';
import type { ArchiveIndex } from './cached-value.js';
import { renderJson, renderedBytes, type BodyEncoder, type RenderedJson } from './rendered-json.js';
import { addSummary, createTextStore, search, type TextIndex } from './text-index.js';

/** The validated archive query (routes/archive-query.ts), the representation aside. */
export type ArchiveQuery = Omit<ArchiveRequest, 'format'>;

export function archivePageKey(query: ArchiveQuery): string {
  return `${query.limit}:${query.offset}:${query.category ?? ''}${query.q === undefined ? '' : `:${query.q}`}`;
}

/** One page of the archive index (a category's, a search's best first), with the list's total. */
export function archivePageOf(index: ArchiveIndex, query: ArchiveQuery): { issues: IssueSummary[]; total: number } {
  const listed = query.category === undefined ? index.all : (index.byCategory.get(query.category) ?? []);
  const list = query.q === undefined ? listed : search(textIndexOf(index), listed, query.q.split(' '));
  return { issues: list.slice(query.offset, query.offset + query.limit), total: list.length };
}

/** Text indexes made from the summaries, for an index that came without one (an older shared copy). */
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

/** The JSON pages of the archive, each rendered once per index. */
export function createRenderedPages(maxBytes: number, encode?: BodyEncoder) {
  const pages = new LRUCache<string, { index: ArchiveIndex; rendered: RenderedJson }>({
    maxSize: maxBytes,
    sizeCalculation: (page) => renderedBytes(page.rendered),
  });
  // Made once per query object (the routes' are remembered per query string, and frozen).
  const keys = new WeakMap<ArchiveQuery, string>();
  const keyOf = (query: ArchiveQuery) => {
    let key = keys.get(query);
    if (key === undefined) keys.set(query, (key = archivePageKey(query)));
    return key;
  };
  return {
    get(index: ArchiveIndex, query: ArchiveQuery): RenderedJson | undefined {
      if (query.q !== undefined) return undefined;
      const cached = pages.get(keyOf(query));
      return cached?.index === index ? cached.rendered : undefined;
    },
    // A search's page is neither kept nor compressed: keeping them would let anyone fill this cache.
    async render(index: ArchiveIndex, query: ArchiveQuery): Promise<RenderedJson> {
      const { issues, total } = archivePageOf(index, query);
      const { limit, offset } = query;
      const nextOffset = offset + limit < total ? offset + limit : null;
      const meta = { total, limit, offset, nextOffset, previousOffset: offset > 0 ? Math.max(0, Math.min(offset, total) - limit) : null };
      const envelope: ArchivePageBody = { ok: true, data: issues, meta };
      if (query.q !== undefined) return renderJson(envelope);
      const rendered = await renderJson(envelope, encode);
      pages.set(keyOf(query), { index, rendered });
      return rendered;
    },
    stats: () => ({ renderedPages: pages.size, renderedPageBytes: pages.calculatedSize }),
  };
}
