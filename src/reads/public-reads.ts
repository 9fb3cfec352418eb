import { LRUCache } from 'lru-cache';
import { ApiError } from '../errors.js';
import type { Metrics } from '../metrics.js';
import {
  compareByName,
  compareNewestFirst,
  isPublicIssue,
  toIssueDetail,
  toIssueSummary,
  toPublicCategory,
  type ArchivePageBody,
  type CategoriesBody,
  type IssueBody,
  type IssueSummary,
  type PublicCategory,
} from '../shape.js';
import type { UpstreamClient } from '../upstream/newsletter-api.js';
import { UpstreamError } from '../upstream/transport.js';
import {
  archiveValue,
  decodeSharedEntry,
  encodeSharedEntry,
  jsonValue,
  sizeOfCachedValue,
  type ArchiveIndex,
  type CachedValue,
} from './cached-value.js';
import { splitMemoryBudget, stringBytes } from './memory-budget.js';
import {
  createReadThroughCache,
  type CacheState,
  type CacheStats,
  type FreshnessRules,
  type Loader,
  type WaitUntil,
} from './read-through-cache.js';
import { renderJson, type RenderedJson } from './rendered-json.js';
import { withSharedTier, type SharedTier } from './shared-tier.js';

export type { RenderedJson } from './rendered-json.js';

/** A cached read; `T` is the envelope its body serializes (type only, for `hc<AppType>`). */
export interface PublicRead<T = unknown> {
  rendered: RenderedJson;
  state: CacheState;
  /** Seconds since the upstream answered; set on STALE reads only (sent as `Age`). */
  ageSeconds?: number;
  readonly envelope?: T;
}

export interface ArchiveQuery {
  limit: number;
  offset: number;
  category?: string | undefined;
}

export interface PublicReadsOptions {
  upstream: UpstreamClient;
  now: () => number;
  ttlSeconds: number;
  /** CACHE_MAX_BYTES: split between the caches below by memory-budget.ts. */
  maxBytes: number;
  notFoundTtlSeconds: number;
  archiveMaxIssues: number;
  onLoadError?: (key: string, error: unknown) => void;
  /** A value too large to keep within `maxBytes` (see ReadThroughCacheOptions.onTooLarge). */
  onTooLarge?: (key: string, bytes: number, maxEntryBytes: number) => void;
  /** A tier shared between isolates (Workers' Cache API); none on Node. */
  sharedCache?: SharedTier;
  /** Told of the upstream-data cache's reads and evictions (see ReadThroughCacheOptions.metrics). */
  metrics?: Metrics;
}

/** The cached archive index as one read: what the JSON pages and the feeds are cut from. */
export interface ArchiveIndexRead {
  index: ArchiveIndex;
  state: CacheState;
  ageSeconds?: number | undefined;
}

export interface PublicReads {
  archiveIndex(waitUntil?: WaitUntil): Promise<ArchiveIndexRead>;
  archivePage(query: ArchiveQuery, waitUntil?: WaitUntil): Promise<PublicRead<ArchivePageBody>>;
  issue(slug: string, waitUntil?: WaitUntil): Promise<PublicRead<IssueBody>>;
  categories(waitUntil?: WaitUntil): Promise<PublicRead<CategoriesBody>>;
  stats(): CacheStats & { notFoundEntries: number; notFoundBytes: number; renderedPages: number; renderedPageBytes: number };
}

/** Staleness limits of docs/contract.md "Caching", also sent in `Cache-Control`. */
export const STALE_WHILE_REVALIDATE_SECONDS = 300;
export const STALE_IF_ERROR_SECONDS = 86_400;
const NOT_FOUND_MAX_ENTRIES = 20_000;
const ARCHIVE_KEY = 'archive';
const CATEGORIES_KEY = 'categories';
const ISSUE_KEY_PREFIX = 'issue:';

/** The key of one archive page among the rendered pages: validated parameters only. */
export function archivePageKey(query: ArchiveQuery): string {
  return `${query.limit}:${query.offset}:${query.category ?? ''}`;
}

/** One page of the archive index (a category's issues when asked for), with the list's total. */
export function archivePageOf(index: ArchiveIndex, query: ArchiveQuery): { issues: IssueSummary[]; total: number } {
  const list = query.category === undefined ? index.all : (index.byCategory.get(query.category) ?? []);
  return { issues: list.slice(query.offset, query.offset + query.limit), total: list.length };
}

/** The three cached public reads: upstream data → allow-listed shapes → serialized envelope. */
export function createPublicReads(options: PublicReadsOptions): PublicReads {
  const { upstream, now, sharedCache } = options;
  const budget = splitMemoryBudget(options.maxBytes);
  const rules: FreshnessRules = {
    ttlMs: options.ttlSeconds * 1000,
    staleWhileRevalidateMs: STALE_WHILE_REVALIDATE_SECONDS * 1000,
    staleIfErrorMs: STALE_IF_ERROR_SECONDS * 1000,
  };

  // Unknown slugs live apart from the main cache, so a slug-scanning bot can neither reach
  // the upstream twice for one slug nor evict the good entries (docs/contract.md "Caching").
  const notFound = new LRUCache<string, true>({
    max: NOT_FOUND_MAX_ENTRIES,
    maxSize: budget.notFound,
    sizeCalculation: (_value, slug) => stringBytes(slug),
    ttl: options.notFoundTtlSeconds * 1000,
    perf: { now },
    // Staleness is checked against the injected clock on every read (no cached "now" timer).
    ttlResolution: 0,
  });

  const cache = createReadThroughCache<CachedValue>({
    ...rules,
    maxBytes: budget.upstreamData,
    maxEntryBytes: budget.upstreamDataEntry,
    notFoundTtlMs: options.notFoundTtlSeconds * 1000,
    now,
    sizeOf: sizeOfCachedValue,
    fetchedAtOf: (value) => value.fetchedAt,
    onLoadError: options.onLoadError,
    onTooLarge: options.onTooLarge,
    metrics: options.metrics,
  });

  const pages = new LRUCache<string, { index: ArchiveIndex; rendered: RenderedJson }>({
    maxSize: budget.renderedPages,
    sizeCalculation: (page) => stringBytes(page.rendered.body),
  });

  /** On Workers, each loader asks the isolates' shared tier before the upstream. */
  const tiered = (load: Loader<CachedValue>): Loader<CachedValue> =>
    sharedCache
      ? withSharedTier(load, {
          store: sharedCache,
          rules,
          now,
          encode: encodeSharedEntry,
          decode: decodeSharedEntry,
          onRefreshError: options.onLoadError,
        })
      : load;

  const loadArchive = tiered(async function loadArchive() {
    const rows = await upstream.listAllPublicIssues(options.archiveMaxIssues);
    const bySlug = new Map<string, IssueSummary>();
    for (const row of rows) {
      // Re-checked here, not only asked of the upstream: a leaky upstream must not leak through us.
      if (isPublicIssue(row) && !bySlug.has(row.slug)) bySlug.set(row.slug, toIssueSummary(row));
    }
    return archiveValue([...bySlug.values()].sort(compareNewestFirst), now());
  });

  const loadCategories = tiered(async function loadCategories() {
    const bySlug = new Map<string, PublicCategory>();
    for (const category of await upstream.listCategories()) {
      if (!bySlug.has(category.slug)) bySlug.set(category.slug, toPublicCategory(category));
    }
    const envelope: CategoriesBody = { ok: true, data: [...bySlug.values()].sort(compareByName) };
    return jsonValue(await renderJson(envelope), now());
  });

  /** An issue the upstream does not have, or must not show, is remembered as a 404. */
  const loadIssue = tiered(async function loadIssue(key) {
    const slug = key.slice(ISSUE_KEY_PREFIX.length);
    let issue;
    try {
      issue = await upstream.getIssueBySlug(slug);
    } catch (error) {
      if (error instanceof UpstreamError && error.kind === 'not_found') {
        notFound.set(slug, true);
        return undefined;
      }
      throw error;
    }
    // A draft, private or renamed issue is a 404 even when the upstream returned it.
    if (!isPublicIssue(issue) || issue.slug !== slug) {
      notFound.set(slug, true);
      return undefined;
    }
    const envelope: IssueBody = { ok: true, data: toIssueDetail(issue) };
    return jsonValue(await renderJson(envelope), now());
  });

  /**
   * A stale copy says how old it is, so a browser or CDN does not count its `max-age` afresh
   * (RFC 9111 §5.1); a fresh one is within `max-age` and needs no `Age`.
   */
  function ageOf(state: CacheState, value: CachedValue): number | undefined {
    return state === 'STALE' ? Math.max(0, Math.floor((now() - value.fetchedAt) / 1000)) : undefined;
  }

  async function readJson<T>(key: string, load: Loader<CachedValue>, waitUntil: WaitUntil | undefined): Promise<PublicRead<T> | undefined> {
    const { value, state } = await cache.read(key, load, waitUntil);
    if (value?.kind !== 'json') return undefined;
    return { rendered: value.rendered, state, ageSeconds: ageOf(state, value) };
  }

  async function archiveIndex(waitUntil: WaitUntil | undefined): Promise<ArchiveIndexRead> {
    const { value, state } = await cache.read(ARCHIVE_KEY, loadArchive, waitUntil);
    if (value?.kind !== 'archive') throw new Error('archive loader returned no index');
    return { index: value.index, state, ageSeconds: ageOf(state, value) };
  }

  return {
    archiveIndex,

    async archivePage(query, waitUntil) {
      const { index, state, ageSeconds } = await archiveIndex(waitUntil);
      const pageKey = archivePageKey(query);
      const cached = pages.get(pageKey);
      if (cached?.index === index) return { rendered: cached.rendered, state, ageSeconds };
      const { issues, total } = archivePageOf(index, query);
      const envelope: ArchivePageBody = {
        ok: true,
        data: issues,
        meta: { total, limit: query.limit, offset: query.offset },
      };
      const rendered = await renderJson(envelope);
      pages.set(pageKey, { index, rendered });
      return { rendered, state, ageSeconds };
    },

    async issue(slug, waitUntil) {
      if (notFound.has(slug)) throw new ApiError('NOT_FOUND', { message: 'No public issue has this slug.' });
      const read = await readJson<IssueBody>(ISSUE_KEY_PREFIX + slug, loadIssue, waitUntil);
      if (!read) throw new ApiError('NOT_FOUND', { message: 'No public issue has this slug.' });
      return read;
    },

    async categories(waitUntil) {
      const read = await readJson<CategoriesBody>(CATEGORIES_KEY, loadCategories, waitUntil);
      if (!read) throw new Error('categories loader returned nothing');
      return read;
    },

    stats() {
      return {
        ...cache.stats(),
        notFoundEntries: notFound.size,
        notFoundBytes: notFound.calculatedSize,
        renderedPages: pages.size,
        renderedPageBytes: pages.calculatedSize,
      };
    },
  };
}
