import { LRUCache } from 'lru-cache';
import { createReadThroughCache, strongEtag, type CacheState, type CacheStats, type WaitUntil } from './read-through-cache.js';
import type { SharedEntry, SharedTier } from './shared-tier.js';
import { ApiError } from '../errors.js';
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
import { UpstreamError, type UpstreamClient } from '../upstream.js';

/** A success envelope serialized once, with its strong ETag: a cache hit only copies bytes. */
export interface RenderedJson {
  body: string;
  etag: string;
}

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

/** The archive as one cached index; every limit/offset/category is served from it. */
interface ArchiveIndex {
  all: IssueSummary[];
  byCategory: Map<string, IssueSummary[]>;
  size: number;
}

/** What the cache holds per key; `fetchedAt` is when the upstream answered (ms). */
type CachedValue =
  | { kind: 'archive'; index: ArchiveIndex; fetchedAt: number }
  | { kind: 'json'; rendered: RenderedJson; size: number; fetchedAt: number };

export interface PublicReadsOptions {
  upstream: UpstreamClient;
  now: () => number;
  ttlSeconds: number;
  maxBytes: number;
  notFoundTtlSeconds: number;
  archiveMaxIssues: number;
  onLoadError?: (key: string, error: unknown) => void;
  /** A value too large to keep within `maxBytes` (see ReadThroughCacheOptions.onTooLarge). */
  onTooLarge?: (key: string, bytes: number, maxEntryBytes: number) => void;
  /** A tier shared between isolates (Workers' Cache API); none on Node. */
  sharedCache?: SharedTier;
}

export interface PublicReads {
  archivePage(query: ArchiveQuery, waitUntil?: WaitUntil): Promise<PublicRead<ArchivePageBody>>;
  issue(slug: string, waitUntil?: WaitUntil): Promise<PublicRead<IssueBody>>;
  categories(waitUntil?: WaitUntil): Promise<PublicRead<CategoriesBody>>;
  stats(): CacheStats & { notFoundEntries: number; notFoundBytes: number; renderedPages: number; renderedPageBytes: number };
}

/** Staleness limits of PRODUCT.md "Caching", also sent in `Cache-Control`. */
export const STALE_WHILE_REVALIDATE_SECONDS = 300;
export const STALE_IF_ERROR_SECONDS = 86_400;
const NOT_FOUND_MAX_ENTRIES = 20_000;
const ARCHIVE_KEY = 'archive';
const CATEGORIES_KEY = 'categories';
const ISSUE_KEY_PREFIX = 'issue:';

// JavaScript strings may take two bytes a character; the estimate errs on the safe side.
const stringBytes = (text: string): number => 2 * text.length + 64;

/** The three cached public reads: upstream data → allow-listed shapes → serialized envelope. */
export function createPublicReads(options: PublicReadsOptions): PublicReads {
  const { upstream, now } = options;
  // One memory budget (CACHE_MAX_BYTES), split: upstream data, serialized archive pages, 404s.
  const notFoundBytes = Math.floor(options.maxBytes * 0.05);
  const pageBytes = Math.floor(options.maxBytes * 0.25);
  const dataBytes = options.maxBytes - pageBytes - notFoundBytes;

  // Unknown slugs live apart from the main cache, so a slug-scanning bot can neither reach
  // the upstream twice for one slug nor evict the good entries (PRODUCT.md "Caching").
  const notFound = new LRUCache<string, true>({
    max: NOT_FOUND_MAX_ENTRIES,
    maxSize: notFoundBytes,
    sizeCalculation: (_value, slug) => stringBytes(slug),
    ttl: options.notFoundTtlSeconds * 1000,
    perf: { now },
    // Staleness is checked against the injected clock on every read (no cached "now" timer).
    ttlResolution: 0,
  });

  const cache = createReadThroughCache<CachedValue>({
    maxBytes: dataBytes,
    ttlMs: options.ttlSeconds * 1000,
    staleWhileRevalidateMs: STALE_WHILE_REVALIDATE_SECONDS * 1000,
    staleIfErrorMs: STALE_IF_ERROR_SECONDS * 1000,
    notFoundTtlMs: options.notFoundTtlSeconds * 1000,
    now,
    sizeOf: (value) => (value.kind === 'archive' ? value.index.size : value.size),
    fetchedAtOf: (value) => value.fetchedAt,
    onLoadError: options.onLoadError,
    onTooLarge: options.onTooLarge,
    load: (key, waitUntil) => (options.sharedCache ? loadShared(options.sharedCache, key, waitUntil) : loadFromUpstream(key)),
  });

  const pages = new LRUCache<string, { index: ArchiveIndex; rendered: RenderedJson }>({
    maxSize: pageBytes,
    sizeCalculation: (page) => stringBytes(page.rendered.body),
  });

  function loadFromUpstream(key: string): Promise<CachedValue | undefined> {
    if (key === ARCHIVE_KEY) return loadArchive();
    if (key === CATEGORIES_KEY) return loadCategories();
    return loadIssue(key.slice(ISSUE_KEY_PREFIX.length));
  }

  /**
   * Shared tier first: a fresh copy another isolate stored saves the upstream call. A copy past
   * its TTL but within stale-while-revalidate is answered at once, as STALE, while one refresh
   * runs behind the response and stores the new copy for every isolate. An older one is kept
   * for stale-if-error. What the upstream answers is stored for the other isolates.
   */
  async function loadShared(shared: SharedTier, key: string, waitUntil: WaitUntil | undefined) {
    const stored = decode(await shared.get(key).catch(() => undefined));
    const age = stored ? now() - stored.fetchedAt : Number.POSITIVE_INFINITY;
    const ttlMs = options.ttlSeconds * 1000;
    if (stored && age <= ttlMs) return stored;
    if (stored && age <= ttlMs + STALE_WHILE_REVALIDATE_SECONDS * 1000) {
      // Handed back past its TTL, the copy is served at once and this isolate asks the tier
      // again after REFRESH_FAILURE_BACKOFF_MS (cache.ts), by when the refresh has landed.
      const refreshing = refreshShared(shared, key);
      waitUntil?.(refreshing);
      return stored;
    }
    let value: CachedValue | undefined;
    try {
      value = await loadFromUpstream(key);
    } catch (error) {
      if (stored && age <= ttlMs + STALE_IF_ERROR_SECONDS * 1000) return stored;
      throw error;
    }
    if (value) waitUntil?.(shared.put(key, encode(value)).catch(() => undefined));
    return value;
  }

  /** The upstream's answer replaces the shared copy; an issue that is gone leaves the tier too. */
  async function refreshShared(shared: SharedTier, key: string): Promise<void> {
    try {
      const value = await loadFromUpstream(key);
      await (value ? shared.put(key, encode(value)) : shared.delete(key));
    } catch (error) {
      options.onLoadError?.(key, error);
    }
  }

  async function loadArchive(): Promise<CachedValue> {
    const rows = await upstream.listAllPublicIssues(options.archiveMaxIssues);
    const bySlug = new Map<string, IssueSummary>();
    for (const row of rows) {
      // Re-checked here, not only asked of the upstream: a leaky upstream must not leak through us.
      if (isPublicIssue(row) && !bySlug.has(row.slug)) bySlug.set(row.slug, toIssueSummary(row));
    }
    return { kind: 'archive', index: buildArchiveIndex([...bySlug.values()].sort(compareNewestFirst)), fetchedAt: now() };
  }

  async function loadCategories(): Promise<CachedValue> {
    const bySlug = new Map<string, PublicCategory>();
    for (const category of await upstream.listCategories()) {
      if (!bySlug.has(category.slug)) bySlug.set(category.slug, toPublicCategory(category));
    }
    return renderJson<CategoriesBody>({ ok: true, data: [...bySlug.values()].sort(compareByName) });
  }

  async function loadIssue(slug: string): Promise<CachedValue | undefined> {
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
    return renderJson<IssueBody>({ ok: true, data: toIssueDetail(issue) });
  }

  /**
   * A stale copy says how old it is, so a browser or CDN does not count its `max-age` afresh
   * (RFC 9111 §5.1); a fresh one is within `max-age` and needs no `Age`.
   */
  function ageOf(state: CacheState, value: CachedValue): number | undefined {
    return state === 'STALE' ? Math.max(0, Math.floor((now() - value.fetchedAt) / 1000)) : undefined;
  }

  async function renderJson<T>(envelope: T): Promise<CachedValue> {
    const body = JSON.stringify(envelope);
    return { kind: 'json', rendered: { body, etag: await strongEtag(body) }, size: stringBytes(body), fetchedAt: now() };
  }

  async function readJson<T>(key: string, waitUntil: WaitUntil | undefined): Promise<PublicRead<T> | undefined> {
    const { value, state } = await cache.read(key, waitUntil);
    if (value?.kind !== 'json') return undefined;
    return { rendered: value.rendered, state, ageSeconds: ageOf(state, value) };
  }

  return {
    async archivePage(query, waitUntil) {
      const { value, state } = await cache.read(ARCHIVE_KEY, waitUntil);
      if (value?.kind !== 'archive') throw new Error('archive loader returned no index');
      const { index } = value;
      const pageKey = `${query.limit}:${query.offset}:${query.category ?? ''}`;
      const cached = pages.get(pageKey);
      const ageSeconds = ageOf(state, value);
      if (cached?.index === index) return { rendered: cached.rendered, state, ageSeconds };
      const list = query.category === undefined ? index.all : (index.byCategory.get(query.category) ?? []);
      const envelope: ArchivePageBody = {
        ok: true,
        data: list.slice(query.offset, query.offset + query.limit),
        meta: { total: list.length, limit: query.limit, offset: query.offset },
      };
      const body = JSON.stringify(envelope);
      const rendered = { body, etag: await strongEtag(body) };
      pages.set(pageKey, { index, rendered });
      return { rendered, state, ageSeconds };
    },

    async issue(slug, waitUntil) {
      if (notFound.has(slug)) throw new ApiError('NOT_FOUND', { message: 'No public issue has this slug.' });
      const read = await readJson<IssueBody>(ISSUE_KEY_PREFIX + slug, waitUntil);
      if (!read) throw new ApiError('NOT_FOUND', { message: 'No public issue has this slug.' });
      return read;
    },

    async categories(waitUntil) {
      const read = await readJson<CategoriesBody>(CATEGORIES_KEY, waitUntil);
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

function buildArchiveIndex(all: IssueSummary[]): ArchiveIndex {
  const byCategory = new Map<string, IssueSummary[]>();
  let size = 256;
  for (const summary of all) {
    size += stringBytes(JSON.stringify(summary));
    if (!summary.category) continue;
    const list = byCategory.get(summary.category.slug) ?? [];
    list.push(summary);
    byCategory.set(summary.category.slug, list);
  }
  return { all, byCategory, size };
}

/** The shared tier stores our own, already public shapes: the archive's summaries or a rendered body. */
function encode(value: CachedValue): SharedEntry {
  const payload =
    value.kind === 'archive'
      ? JSON.stringify({ kind: 'archive', all: value.index.all })
      : JSON.stringify({ kind: 'json', body: value.rendered.body, etag: value.rendered.etag });
  return { payload, fetchedAt: value.fetchedAt };
}

function decode(entry: SharedEntry | undefined): CachedValue | undefined {
  if (!entry) return undefined;
  try {
    const parsed = JSON.parse(entry.payload) as { kind?: unknown; all?: unknown; body?: unknown; etag?: unknown };
    if (parsed.kind === 'archive' && Array.isArray(parsed.all)) {
      return { kind: 'archive', index: buildArchiveIndex(parsed.all as IssueSummary[]), fetchedAt: entry.fetchedAt };
    }
    if (parsed.kind === 'json' && typeof parsed.body === 'string' && typeof parsed.etag === 'string') {
      return {
        kind: 'json',
        rendered: { body: parsed.body, etag: parsed.etag },
        size: stringBytes(parsed.body),
        fetchedAt: entry.fetchedAt,
      };
    }
  } catch {
    // An unreadable entry is a miss.
  }
  return undefined;
}
