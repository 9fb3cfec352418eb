import { LRUCache } from 'lru-cache';
import { ApiError } from '../http/errors.js';
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
  type IssueDetail,
  type IssueSummary,
  type PublicCategory,
} from '../public-shapes.js';
import type { UpstreamClient } from '../upstream/newsletter-api.js';
import { UpstreamError } from '../upstream/transport.js';
import {
  archiveValue,
  decodeSharedEntry,
  encodeSharedEntry,
  jsonValue,
  sizeOfCachedValue,
  type ArchiveIndex,
  type ArchiveSync,
  type CachedValue,
  type IssueSource,
} from './cached-value.js';
import type { UpstreamIssue } from '../upstream/schemas.js';
import { splitMemoryBudget, stringBytes } from './memory-budget.js';
import {
  andThen,
  createReadThroughCache,
  type CacheState,
  type CacheStats,
  type FreshnessRules,
  type Loader,
  type MaybePromise,
  type ReadResult,
  type Visitor,
  type WaitUntil,
} from './read-through-cache.js';
import type { ReadBudget } from './read-budget.js';
import { renderJson, withEncodedCopies, type BodyEncoder, type RenderedJson } from './rendered-json.js';
import { createRenderedPages, type ArchiveQuery } from './archive-pages.js';
import { withSharedTier, type SharedTier } from './shared-tier.js';
import { freshnessRulesOf, type CachePolicies } from './cache-policies.js';
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
  /** How long each read is fresh and stale (reads/cache-policies.ts). */
  policies: Pick<CachePolicies, 'archive' | 'issue' | 'categories'>;
  /** CACHE_MAX_BYTES: split between the caches below by memory-budget.ts. */
  maxBytes: number;
  notFoundTtlSeconds: number;
  archiveMaxIssues: number;
  /** ARCHIVE_RESYNC_SECONDS: how often the archive is read whole when refreshes read only its head (default 600). */
  archiveResyncSeconds?: number;
  onLoadError?: (key: string, error: unknown) => void;
  /** A value too large to keep within `maxBytes` (see ReadThroughCacheOptions.onTooLarge). */
  onTooLarge?: (key: string, bytes: number, maxEntryBytes: number) => void;
  /** A tier shared between isolates (Workers' Cache API); none on Node. */
  sharedCache?: SharedTier;
  /** Charged once per by-slug read the archive index cannot justify (see loadIssue); none: not limited. */
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

/**
 * `client` is the visitor: the upstream loads its read causes are charged to its IP. A read a
 * fresh copy answers is answered at once, not as a promise.
 */
export interface PublicReads {
  archiveIndex(waitUntil?: WaitUntil, client?: Visitor): MaybePromise<ArchiveIndexRead>;
  archivePage(query: ArchiveQuery, waitUntil?: WaitUntil, client?: Visitor): MaybePromise<PublicRead<ArchivePageBody>>;
  issue(slug: string, waitUntil?: WaitUntil, client?: Visitor): MaybePromise<PublicRead<IssueBody>>;
  categories(waitUntil?: WaitUntil, client?: Visitor): MaybePromise<PublicRead<CategoriesBody>>;
  /**
   * Reads the archive and the categories from the upstream now, whatever their copies' age, into
   * this cache and the shared tier (a Workers Cron Trigger: visitors then find a copy). Charged
   * to no visitor (the total read budget only).
   */
  refreshFromUpstream(waitUntil?: WaitUntil): Promise<{ issues: number }>;
  stats(): CacheStats & { notFoundEntries: number; notFoundBytes: number; renderedPages: number; renderedPageBytes: number };
}

const NOT_FOUND_MAX_ENTRIES = 20_000;
/** ARCHIVE_RESYNC_SECONDS's default (docs/upstream.md "How the archive is read" says why). */
export const DEFAULT_ARCHIVE_RESYNC_SECONDS = 600;
const ARCHIVE_KEY = 'archive';
const CATEGORIES_KEY = 'categories';
const ISSUE_KEY_PREFIX = 'issue:';

const noSuchIssue = () => new ApiError('NOT_FOUND', { message: 'No public issue has this slug.' });

/** The three cached public reads: upstream data → allow-listed shapes → serialized envelope. */
export function createPublicReads(options: PublicReadsOptions): PublicReads {
  const { upstream, now, sharedCache, readBudget } = options;
  /** A read the index cannot justify is paid for first; over budget, it is refused unmade. */
  const chargeUnlistedRead = (client: string | undefined) => readBudget?.take(client);
  const resyncMs = (options.archiveResyncSeconds ?? DEFAULT_ARCHIVE_RESYNC_SECONDS) * 1000;
  const budget = splitMemoryBudget(options.maxBytes);
  const rules = {
    [ARCHIVE_KEY]: freshnessRulesOf(options.policies.archive),
    [CATEGORIES_KEY]: freshnessRulesOf(options.policies.categories),
    issue: freshnessRulesOf(options.policies.issue),
  };
  const rulesFor = (key: string): FreshnessRules => (key === ARCHIVE_KEY ? rules.archive : key === CATEGORIES_KEY ? rules.categories : rules.issue);

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
    ...rules.issue,
    rulesFor,
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

  /**
   * `value` with its compressed copies, made now where it has none yet: a copy read back from the
   * shared tier (which stores the text only), or a letter kept before its copies were made. The
   * same value where there is nothing to add; a failed compression leaves it text.
   */
  async function withCopies(value: CachedValue): Promise<CachedValue> {
    if (value.kind !== 'json' || options.encodeBody === undefined) return value;
    const rendered = await withEncodedCopies(value.rendered, options.encodeBody).catch(() => value.rendered);
    // Made again for its size: the copies count in the cache's bytes.
    return rendered === value.rendered ? value : jsonValue(rendered, value.fetchedAt, value.version);
  }

  /**
   * Compressed copies made behind the answer, one body at a time (a whole read seeds hundreds of
   * letters, and the first visitor would wait for all of them): each replaces its text-only copy
   * while that is still the fresh one kept. A letter that went stale first gets its copies at its
   * next refresh (loadIssue). A queued letter's text is held until its turn: at most what one
   * archive read keeps (the cache's entry bound).
   */
  let compressing: Promise<void> = Promise.resolve();
  function compressBehind(key: string, value: CachedValue): void {
    if (options.encodeBody === undefined || value.kind !== 'json') return;
    compressing = compressing
      .then(async () => {
        if (!cache.holds(key, value)) return;
        const next = await withCopies(value);
        if (next !== value) cache.replace(key, value, next);
      })
      .catch((error: unknown) => options.onLoadError?.(key, error));
  }

  /**
   * On Workers, each loader asks the isolates' shared tier before the upstream (on Node, Redis);
   * what it answers is given its compressed copies where it has none.
   */
  const withSharedCopy = (load: Loader<CachedValue>, keyRules: FreshnessRules): Loader<CachedValue> => {
    if (!sharedCache) return load;
    const loadThroughTier = withSharedTier(load, {
      store: sharedCache,
      rules: keyRules,
      now,
      encode: encodeSharedEntry,
      decode: decodeSharedEntry,
      onRefreshError: options.onLoadError,
    });
    return async (...args) => {
      const value = await loadThroughTier(...args);
      return value && withCopies(value);
    };
  };

  /**
   * Reads the archive index, whole or (when the last whole read proved the upstream lists newest
   * `sentAt` first, and a whole read is not yet due) only its head down to a row it knows
   * (docs/upstream.md "How the archive is read"). Letters the rows carry are kept as issue
   * copies while they fit the cache, so a listed issue opens without a second call.
   */
  async function loadArchiveFromUpstream(_key: string, _waitUntil: WaitUntil | undefined, _client?: string, previous?: CachedValue) {
    const prior = previous?.kind === 'archive' ? previous.index : undefined;
    const time = now();
    const contents = createContentKeeper();
    if (prior && upstream.readPublicArchiveHead && prior.sync.newestSentFirst && time - prior.sync.fullReadAt < resyncMs) {
      const head = await upstream.readPublicArchiveHead({
        isKnownId: (id) => prior.sync.ids.has(id),
        reduceRow: contents.reduceRow,
        validators: prior.sync.head,
      });
      // Stamped when the upstream answered (a read of many pages can outlast a short TTL).
      if (head.unchanged) return { kind: 'archive' as const, index: prior, fetchedAt: now() };
      if (head.reachedKnown && head.newestSentFirst && head.dropped.count === 0) {
        const replaced = new Set(head.issues.map((row) => row.source.id));
        const kept = [...head.issues, ...indexedRows(prior).filter((row) => !replaced.has(row.source.id))];
        const ids = new Set(prior.sync.ids);
        for (const id of replaced) ids.add(id);
        const answeredAt = now();
        await contents.seed(answeredAt);
        return indexValue(kept, answeredAt, prior.complete && kept.length < options.archiveMaxIssues, { ...prior.sync, ids, head: head.validators });
      }
    }
    // Complete only when nothing was cut off, dropped or paged oddly (else slugs are read by slug).
    if (upstream.readPublicArchive) {
      const read = await upstream.readPublicArchive(options.archiveMaxIssues, { reduceRow: contents.reduceRow, expectedRows: prior?.sync.ids.size });
      const clean = read.dropped.count === 0 && read.findings.length === 0;
      const ids = new Set(read.issues.map((row) => row.source.id));
      const answeredAt = now();
      await contents.seed(answeredAt);
      const sync = { newestSentFirst: clean && read.newestSentFirst, fullReadAt: time, ids };
      return indexValue(read.issues, answeredAt, clean && read.issues.length < options.archiveMaxIssues, sync);
    }
    const rows = (await upstream.listAllPublicIssues(options.archiveMaxIssues)).map(contents.reduceRow);
    const answeredAt = now();
    await contents.seed(answeredAt);
    return indexValue(rows, answeredAt, rows.length < options.archiveMaxIssues, { newestSentFirst: false, fullReadAt: time, ids: new Set() });
  }

  /** What the index keeps of one listed row: a summary when it is public, and where it came from. */
  interface KeptRow {
    summary: IssueSummary | undefined;
    source: IssueSource;
  }

  /** The rows of an index, back in the form a refresh merges. */
  function indexedRows(index: ArchiveIndex): KeptRow[] {
    return index.all.map((summary) => ({ summary, source: index.sources.get(summary.slug) ?? { id: summary.slug, updatedAt: null } }));
  }

  /** The cached index of `rows` (newest first, one per slug, public ones only). */
  function indexValue(rows: readonly KeptRow[], fetchedAt: number, complete: boolean, sync: ArchiveSync): CachedValue {
    const bySlug = new Map<string, IssueSummary>();
    const sources = new Map<string, IssueSource>();
    for (const { summary, source } of rows) {
      if (summary === undefined || bySlug.has(summary.slug)) continue;
      bySlug.set(summary.slug, summary);
      sources.set(summary.slug, source);
    }
    return archiveValue([...bySlug.values()].sort(compareNewestFirst), fetchedAt, complete, { sources, sync });
  }

  /**
   * Keeps the letters list rows carry, within what the cache can hold of them (so a read of
   * thousands of fat rows holds no more than that), and seeds them as issue copies once the read
   * is done. A copy already kept for the same `updatedAt` is left as it is.
   */
  function createContentKeeper() {
    const details: { detail: IssueDetail; version: string | undefined }[] = [];
    let bytes = 0;
    return {
      reduceRow(row: UpstreamIssue): KeptRow {
        // Re-checked here, not only asked of the upstream: a leaky upstream must not leak through us.
        if (!isPublicIssue(row)) return { summary: undefined, source: { id: row.id, updatedAt: row.updatedAt ?? null } };
        const summary = toIssueSummary(row);
        const version = row.updatedAt ?? undefined;
        if (typeof row.contentHtml === 'string' && bytes < budget.upstreamDataEntry) {
          const copy = cache.peek(ISSUE_KEY_PREFIX + row.slug);
          const same = copy?.kind === 'json' && version !== undefined && copy.version === version;
          if (!same) {
            bytes += stringBytes(row.contentHtml);
            details.push({ detail: { ...summary, contentHtml: row.contentHtml }, version });
          }
        }
        return { summary, source: { id: row.id, updatedAt: row.updatedAt ?? null } };
      },
      /** Kept as text at once, so the read's answer never waits on compressing its letters: they are compressed behind it. */
      async seed(fetchedAt: number): Promise<void> {
        for (const { detail, version } of details) {
          const key = ISSUE_KEY_PREFIX + detail.slug;
          const value = jsonValue(await renderJson({ ok: true, data: detail } satisfies IssueBody), fetchedAt, version);
          cache.seed(key, value);
          compressBehind(key, value);
        }
        details.length = 0;
      },
    };
  }
  const loadArchive = withSharedCopy(loadArchiveFromUpstream, rules.archive);

  async function loadCategoriesFromUpstream() {
    const bySlug = new Map<string, PublicCategory>();
    for (const category of await upstream.listCategories()) {
      if (!bySlug.has(category.slug)) bySlug.set(category.slug, toPublicCategory(category));
    }
    const envelope: CategoriesBody = { ok: true, data: [...bySlug.values()].sort(compareByName) };
    return jsonValue(await renderJson(envelope, options.encodeBody), now());
  }
  const loadCategories = withSharedCopy(loadCategoriesFromUpstream, rules.categories);

  /**
   * A loader that reads the upstream whatever the shared copy's age, and stores what it read
   * there. It refreshes from the copy this instance holds or, in a new one, the shared copy, so
   * a scheduled refresh of an archive known to be newest first reads only its head.
   */
  const publishing =
    (load: Loader<CachedValue>): Loader<CachedValue> =>
    async (key, waitUntil, client, previous) => {
      const entry = previous === undefined ? await sharedCache?.get(key).catch(() => undefined) : undefined;
      const value = await load(key, waitUntil, client, previous ?? (entry && decodeSharedEntry(entry)));
      if (value !== undefined) await sharedCache?.put(key, encodeSharedEntry(value));
      return value;
    };

  /**
   * An issue the upstream does not have, or must not show, is remembered as a 404. A copy whose
   * row the index still lists with the same `updatedAt` is still right: it is kept without a
   * call. A slug the index lists is read by slug without the read budget: only reads the index
   * cannot justify (no index, or one cut off at ARCHIVE_MAX_ISSUES) are charged to it.
   */
  const loadIssue = withSharedCopy(async function loadIssue(key, waitUntil, client, previous) {
    const slug = key.slice(ISSUE_KEY_PREFIX.length);
    let archive = cache.peek(ARCHIVE_KEY);
    // A copy is checked against an index at least as fresh as itself would be: a stale index is
    // refreshed first (joining a refresh under way; on failure the kept one answers).
    if (previous?.kind === 'json' && archive !== undefined && now() > archive.fetchedAt + rules.archive.ttlMs) {
      archive = (await cache.read(ARCHIVE_KEY, loadArchive, waitUntil, { client: () => client, forceRefresh: true })).value;
    }
    const index = archive?.kind === 'archive' ? archive : undefined;
    const listed = index?.index.slugs.has(slug) === true;
    const version = index?.index.sources.get(slug)?.updatedAt;
    if (index && previous?.kind === 'json' && previous.version !== undefined && previous.version === version) {
      const kept = await withCopies(previous);
      return { ...kept, fetchedAt: Math.max(previous.fetchedAt, index.fetchedAt) };
    }
    // A copy gone from a complete index read after it was made: unpublished (or renamed). A slug
    // without a copy was looked up before this load (slug-lookup.ts): it is read by slug.
    if (previous && index && !listed && index.index.complete && index.fetchedAt >= previous.fetchedAt) {
      notFound.set(slug, true);
      return undefined;
    }
    if (!listed) chargeUnlistedRead(client);
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
    return jsonValue(await renderJson(envelope, options.encodeBody), now(), issue.updatedAt ?? undefined);
  }, rules.issue);

  /**
   * A stale copy says how old it is, so a browser or CDN does not count its `max-age` afresh
   * (RFC 9111 §5.1); a fresh one is within `max-age` and needs no `Age`.
   */
  function ageOf(state: CacheState, value: CachedValue): number | undefined {
    return state === 'STALE' ? Math.max(0, Math.floor((now() - value.fetchedAt) / 1000)) : undefined;
  }

  /** A cached body as a public read: stale ones say how old they are. */
  function jsonRead<T>({ value, state }: ReadResult<CachedValue>): PublicRead<T> | undefined {
    return value?.kind === 'json' ? { rendered: value.rendered, state, ageSeconds: ageOf(state, value) } : undefined;
  }

  function readJson<T>(key: string, load: Loader<CachedValue>, waitUntil: WaitUntil | undefined, client: Visitor | undefined) {
    return andThen(cache.read(key, load, waitUntil, { client }), jsonRead<T>);
  }

  const lookUpSlug = createIndexedSlugLookup({
    cache,
    key: ARCHIVE_KEY,
    load: loadArchive,
    loadFromUpstream: loadArchiveFromUpstream,
    now,
    minRefreshIntervalMs: options.indexRefreshMinIntervalMs ?? INDEX_REFRESH_MIN_INTERVAL_MS,
  });

  /** The issue's copy was made before a complete index that no longer lists it: it was unpublished. */
  function droppedFromIndex(key: string, slug: string): boolean {
    const archive = cache.peek(ARCHIVE_KEY);
    if (archive?.kind !== 'archive' || !archive.index.complete || archive.index.slugs.has(slug)) return false;
    const copy = cache.peek(key);
    return copy !== undefined && archive.fetchedAt >= copy.fetchedAt;
  }

  function archiveIndex(waitUntil: WaitUntil | undefined, client?: Visitor): MaybePromise<ArchiveIndexRead> {
    return andThen(cache.read(ARCHIVE_KEY, loadArchive, waitUntil, { client }), ({ value, state }) => {
      if (value?.kind !== 'archive') throw new Error('archive loader returned no index');
      return { index: value.index, state, ageSeconds: ageOf(state, value) };
    });
  }

  /** The issue's cached body, loaded (or refreshed) when it has none fresh. */
  function readIssue(key: string, waitUntil: WaitUntil | undefined, client: Visitor | undefined): MaybePromise<PublicRead<IssueBody>> {
    return andThen(readJson<IssueBody>(key, loadIssue, waitUntil, client), (read) => read ?? Promise.reject(noSuchIssue()));
  }

  return {
    archiveIndex,

    archivePage(query, waitUntil, client) {
      return andThen(archiveIndex(waitUntil, client), ({ index, state, ageSeconds }) => {
        const rendered = pages.get(index, query);
        if (rendered !== undefined) return { rendered, state, ageSeconds };
        return pages.render(index, query).then((page) => ({ rendered: page, state, ageSeconds }));
      });
    },

    issue(slug, waitUntil, client) {
      const key = ISSUE_KEY_PREFIX + slug;
      if (notFound.has(slug)) return Promise.reject(noSuchIssue());
      // A copy of an issue the index no longer lists (unpublished) is not served; any other slug
      // is looked up in the archive index first, so an unknown slug never reaches the upstream.
      if (cache.has(key)) return droppedFromIndex(key, slug) ? Promise.reject(noSuchIssue()) : readIssue(key, waitUntil, client);
      return lookUpSlug(slug, { waitUntil, client }).then((found) => (found === 'absent' ? Promise.reject(noSuchIssue()) : readIssue(key, waitUntil, client)));
    },

    async refreshFromUpstream(waitUntil) {
      // Joins a load under way; a failure leaves the copies as they were (stale-if-error), and
      // a copy handed back stale says the refresh failed.
      const archive = await cache.read(ARCHIVE_KEY, publishing(loadArchiveFromUpstream), waitUntil, { forceRefresh: true });
      const categories = await cache.read(CATEGORIES_KEY, publishing(loadCategoriesFromUpstream), waitUntil, { forceRefresh: true });
      if (archive.state === 'STALE' || categories.state === 'STALE') throw new Error('the upstream refresh failed; the copies stay as they were');
      if (archive.value?.kind !== 'archive') throw new Error('archive loader returned no index');
      return { issues: archive.value.index.all.length };
    },

    categories(waitUntil, client) {
      return andThen(readJson<CategoriesBody>(CATEGORIES_KEY, loadCategories, waitUntil, client), (read) => {
        if (!read) throw new Error('categories loader returned nothing');
        return read;
      });
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
