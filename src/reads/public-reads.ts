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
import type { ReadBudget } from './read-budget.js';
import { renderJson, type BodyEncoder, type RenderedJson } from './rendered-json.js';
import { createRenderedPages, type ArchiveQuery } from './archive-pages.js';
import { withSharedTier, type SharedTier } from './shared-tier.js';
import { createIndexedSlugLookup, INDEX_REFRESH_MIN_INTERVAL_MS } from './slug-lookup.js';

export type { RenderedJson } from './rendered-json.js';
export type { ArchiveQuery } from './archive-pages.js';

/** A cached read; `T` is the envelope its body serializes (type only, for `hc<AppType>`). */
export interface PublicRead<T = unknown> {
  rendered: RenderedJson;
  state: CacheState;
  /** Seconds since the upstream answered; set on STALE reads only (sent as `Age`). */
  ageSeconds?: number;
  readonly envelope?: T;
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
  /** Charged once per upstream load a visitor's read causes; none: loads are not limited. */
  readBudget?: ReadBudget;
  /** Shortest time between two archive index refreshes an unlisted slug may cause (default 5 s). */
  indexRefreshMinIntervalMs?: number;
  /** Told of the upstream-data cache's reads and evictions (see ReadThroughCacheOptions.metrics). */
  metrics?: Metrics;
  /** Compresses each JSON copy once as it is made (Node); none: copies are kept as text only. */
  encodeBody?: BodyEncoder;
}

/** The cached archive index as one read: what the JSON pages and the feeds are cut from. */
export interface ArchiveIndexRead {
  index: ArchiveIndex;
  state: CacheState;
  ageSeconds?: number | undefined;
}

/** `client` is the visitor's IP: the upstream loads its read causes are charged to it. */
export interface PublicReads {
  archiveIndex(waitUntil?: WaitUntil, client?: string): Promise<ArchiveIndexRead>;
  archivePage(query: ArchiveQuery, waitUntil?: WaitUntil, client?: string): Promise<PublicRead<ArchivePageBody>>;
  issue(slug: string, waitUntil?: WaitUntil, client?: string): Promise<PublicRead<IssueBody>>;
  categories(waitUntil?: WaitUntil, client?: string): Promise<PublicRead<CategoriesBody>>;
  /**
   * The same three reads when each can be answered at once from a fresh cached copy (a HIT),
   * synchronously; `undefined` when it would need a load, a render or an error.
   */
  fresh: {
    archivePage(query: ArchiveQuery): PublicRead<ArchivePageBody> | undefined;
    issue(slug: string): PublicRead<IssueBody> | undefined;
    categories(): PublicRead<CategoriesBody> | undefined;
  };
  stats(): CacheStats & { notFoundEntries: number; notFoundBytes: number; renderedPages: number; renderedPageBytes: number };
}

/** Staleness limits of docs/contract.md "Caching", also sent in `Cache-Control`. */
export const STALE_WHILE_REVALIDATE_SECONDS = 300;
export const STALE_IF_ERROR_SECONDS = 86_400;
const NOT_FOUND_MAX_ENTRIES = 20_000;
const ARCHIVE_KEY = 'archive';
const CATEGORIES_KEY = 'categories';
const ISSUE_KEY_PREFIX = 'issue:';

const noSuchIssue = () => new ApiError('NOT_FOUND', { message: 'No public issue has this slug.' });

/** The three cached public reads: upstream data → allow-listed shapes → serialized envelope. */
export function createPublicReads(options: PublicReadsOptions): PublicReads {
  const { upstream, now, sharedCache, readBudget } = options;
  /** Every upstream load a visitor causes is paid for first; over budget, it is refused unmade. */
  const charge = (client: string | undefined) => readBudget?.take(client);
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

  const pages = createRenderedPages(budget.renderedPages, options.encodeBody);

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

  async function loadArchiveFromUpstream(_key: string, _waitUntil: WaitUntil | undefined, client?: string) {
    charge(client);
    // Complete only when nothing was cut off, dropped or paged oddly (else slugs are read by slug).
    const read = upstream.readPublicArchive ? await upstream.readPublicArchive(options.archiveMaxIssues) : undefined;
    const rows = read?.issues ?? (await upstream.listAllPublicIssues(options.archiveMaxIssues));
    const clean = read === undefined || (read.dropped.count === 0 && read.findings.length === 0);
    const bySlug = new Map<string, IssueSummary>();
    for (const row of rows) {
      // Re-checked here, not only asked of the upstream: a leaky upstream must not leak through us.
      if (isPublicIssue(row) && !bySlug.has(row.slug)) bySlug.set(row.slug, toIssueSummary(row));
    }
    return archiveValue([...bySlug.values()].sort(compareNewestFirst), now(), clean && rows.length < options.archiveMaxIssues);
  }
  const loadArchive = tiered(loadArchiveFromUpstream);

  const loadCategories = tiered(async function loadCategories(_key, _waitUntil, client) {
    charge(client);
    const bySlug = new Map<string, PublicCategory>();
    for (const category of await upstream.listCategories()) {
      if (!bySlug.has(category.slug)) bySlug.set(category.slug, toPublicCategory(category));
    }
    const envelope: CategoriesBody = { ok: true, data: [...bySlug.values()].sort(compareByName) };
    return jsonValue(await renderJson(envelope, options.encodeBody), now());
  });

  /** An issue the upstream does not have, or must not show, is remembered as a 404. */
  const loadIssue = tiered(async function loadIssue(key, _waitUntil, client) {
    const slug = key.slice(ISSUE_KEY_PREFIX.length);
    charge(client);
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
    return jsonValue(await renderJson(envelope, options.encodeBody), now());
  });

  /**
   * A stale copy says how old it is, so a browser or CDN does not count its `max-age` afresh
   * (RFC 9111 §5.1); a fresh one is within `max-age` and needs no `Age`.
   */
  function ageOf(state: CacheState, value: CachedValue): number | undefined {
    return state === 'STALE' ? Math.max(0, Math.floor((now() - value.fetchedAt) / 1000)) : undefined;
  }

  async function readJson<T>(
    key: string,
    load: Loader<CachedValue>,
    waitUntil: WaitUntil | undefined,
    client: string | undefined,
  ): Promise<PublicRead<T> | undefined> {
    const { value, state } = await cache.read(key, load, waitUntil, { client });
    if (value?.kind !== 'json') return undefined;
    return { rendered: value.rendered, state, ageSeconds: ageOf(state, value) };
  }

  function freshJson<T>(key: string): PublicRead<T> | undefined {
    return cache.readFresh(key, (value): PublicRead<T> | undefined =>
      value.kind === 'json' ? { rendered: value.rendered, state: 'HIT' } : undefined,
    );
  }

  const lookUpSlug = createIndexedSlugLookup({
    cache,
    key: ARCHIVE_KEY,
    load: loadArchive,
    loadFromUpstream: loadArchiveFromUpstream,
    now,
    minRefreshIntervalMs: options.indexRefreshMinIntervalMs ?? INDEX_REFRESH_MIN_INTERVAL_MS,
  });

  async function archiveIndex(waitUntil: WaitUntil | undefined, client?: string): Promise<ArchiveIndexRead> {
    const { value, state } = await cache.read(ARCHIVE_KEY, loadArchive, waitUntil, { client });
    if (value?.kind !== 'archive') throw new Error('archive loader returned no index');
    return { index: value.index, state, ageSeconds: ageOf(state, value) };
  }

  return {
    archiveIndex,

    async archivePage(query, waitUntil, client) {
      const { index, state, ageSeconds } = await archiveIndex(waitUntil, client);
      const rendered = pages.get(index, query) ?? (await pages.render(index, query));
      return { rendered, state, ageSeconds };
    },

    async issue(slug, waitUntil, client) {
      const key = ISSUE_KEY_PREFIX + slug;
      if (notFound.has(slug)) throw noSuchIssue();
      // A slug with a copy is read as before (its refresh notices a removal); any other is
      // looked up in the archive index first, so an unknown slug never reaches the upstream.
      if (!cache.has(key) && (await lookUpSlug(slug, { waitUntil, client })) === 'absent') throw noSuchIssue();
      const read = await readJson<IssueBody>(key, loadIssue, waitUntil, client);
      if (!read) throw noSuchIssue();
      return read;
    },

    async categories(waitUntil, client) {
      const read = await readJson<CategoriesBody>(CATEGORIES_KEY, loadCategories, waitUntil, client);
      if (!read) throw new Error('categories loader returned nothing');
      return read;
    },

    fresh: {
      archivePage(query) {
        return cache.readFresh(ARCHIVE_KEY, (value): PublicRead<ArchivePageBody> | undefined => {
          const rendered = value.kind === 'archive' ? pages.get(value.index, query) : undefined;
          return rendered && { rendered, state: 'HIT' };
        });
      },
      issue: (slug) => (notFound.has(slug) ? undefined : freshJson(ISSUE_KEY_PREFIX + slug)),
      categories: () => freshJson(CATEGORIES_KEY),
    },

    stats() {
      return {
        ...cache.stats(),
        notFoundEntries: notFound.size,
        notFoundBytes: notFound.calculatedSize,
        ...pages.stats(),
      };
    },
  };
}
