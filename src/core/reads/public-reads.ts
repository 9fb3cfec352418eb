import { LRUCache } from 'lru-cache';
import { ApiError } from '../http/errors.js';
import type { Metrics } from '../metrics.js';
import type {
  ArchivePageBody,
  CategoriesBody,
  CategoryListing,
  IssueBody,
  IssueNeighbour,
  IssueSummary,
  PublicCategory,
} from '../public-shapes.js';
import {
  compareByName,
  compareNewestFirst,
  isPublicIssue,
  toIssueDetail,
  toIssueNeighbour,
  toIssueSummary,
  toPublicCategory,
} from './allow-list.js';
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
import { placeHead, type ListOrder } from '../upstream/archive.js';
import { splitMemoryBudget, stringBytes } from './memory-budget.js';
import {
  createReadThroughCache,
  isFresh,
  type CacheState,
  type CacheStats,
  type FreshnessRules,
  type Loader,
  type WaitUntil,
} from './read-through-cache.js';
import { ReadBudgetExceeded, type ReadBudget } from './read-budget.js';
import type { FailureSpells, StaleReason } from '../upstream/failure-policy.js';
import { renderJson, withEncodedCopies, type BodyEncoder, type RenderedJson } from './rendered-json.js';
import { createRenderedPages, type ArchiveQuery } from './archive-pages.js';
import { withSharedTier, type SharedTier } from './shared-tier.js';
import { createIndexedSlugLookup, INDEX_REFRESH_MIN_INTERVAL_MS, type IndexCopy } from './slug-lookup.js';
import { countWords, readingMinutesOf } from './letter-text.js';
import { addSummary, compacted, createTextStore, documentOf, worthCompacting, type TextIndex, type TextStore } from './text-index.js';

export type { RenderedJson } from './rendered-json.js';
export type { ArchiveQuery } from './archive-pages.js';

/** A cached read; `T` is the envelope its body serializes (type only, for `hc<AppType>`). */
export interface PublicRead<T = unknown> {
  rendered: RenderedJson;
  state: CacheState;
  /** Seconds since the upstream answered; set on STALE reads only (sent as `Age`). */
  ageSeconds?: number;
  /** Why a STALE read was answered stale (for the metrics); set on STALE reads only. */
  staleReason?: StaleReason | undefined;
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
  /** Told of loads that brought a copy, and of reads a failing upstream affected (src/upstream-failures.ts). */
  spells?: Pick<FailureSpells, 'loaded' | 'affectedRead'>;
}

/** The cached archive index as one read: what the JSON pages and the feeds are cut from. */
export interface ArchiveIndexRead {
  index: ArchiveIndex;
  state: CacheState;
  ageSeconds?: number | undefined;
  staleReason?: StaleReason | undefined;
}

/** `client` is the visitor's IP: the upstream loads its read causes are charged to it. */
export interface PublicReads {
  archiveIndex(waitUntil?: WaitUntil, client?: string): Promise<ArchiveIndexRead>;
  archivePage(query: ArchiveQuery, waitUntil?: WaitUntil, client?: string): Promise<PublicRead<ArchivePageBody>>;
  issue(slug: string, waitUntil?: WaitUntil, client?: string): Promise<PublicRead<IssueBody>>;
  categories(waitUntil?: WaitUntil, client?: string): Promise<PublicRead<CategoriesBody>>;
  /**
   * Reads the archive and the categories from the upstream now, whatever their copies' age, into
   * this cache and the shared tier (a Workers Cron Trigger: visitors then find a copy). Charged
   * to no visitor (the total read budget only).
   */
  refreshFromUpstream(waitUntil?: WaitUntil): Promise<{ issues: number }>;
  /**
   * The archive index no older than its TTL, for the archive watch (DEPLOY_HOOK_URL): the copy
   * kept while it is fresh; else, with `load` (the default), the shared tier's when it is fresh,
   * else (with `upstream`, the default) one read from the upstream now, waited for and stored in
   * the shared tier. `undefined` when no fresh copy could be had. Charged to no visitor.
   */
  freshArchiveIndex(options?: { load?: boolean; upstream?: boolean }): Promise<IndexCopy | undefined>;
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
/** ARCHIVE_RESYNC_SECONDS's default (docs/upstream.md "How the archive is read" says why). */
export const DEFAULT_ARCHIVE_RESYNC_SECONDS = 600;
const ARCHIVE_KEY = 'archive';
const CATEGORIES_KEY = 'categories';
const ISSUE_KEY_PREFIX = 'issue:';

const noSuchIssue = () => new ApiError('NOT_FOUND', { message: 'No public issue has this slug.' });

/** An issue page's neighbours in archive order. */
interface Neighbours {
  newer: IssueNeighbour | null;
  older: IssueNeighbour | null;
}
const NO_NEIGHBOURS: Neighbours = { newer: null, older: null };
/** What a copy's neighbours are compared by: a copy rendered with other ones is rendered again. */
const neighboursKey = (neighbours: Neighbours) => JSON.stringify([neighbours.newer, neighbours.older]);

/** The three cached public reads: upstream data → allow-listed shapes → serialized envelope. */
export function createPublicReads(options: PublicReadsOptions): PublicReads {
  const { upstream, now, sharedCache, readBudget } = options;
  /** A read the index cannot justify is paid for first; over budget, it is refused unmade. */
  const chargeUnlistedRead = (client: string | undefined) => readBudget?.take(client);
  const resyncMs = (options.archiveResyncSeconds ?? DEFAULT_ARCHIVE_RESYNC_SECONDS) * 1000;
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
    onLoaded: (_key, value) => options.spells?.loaded(value.fetchedAt),
    retryAtOf: (error) => (error instanceof UpstreamError ? error.heldUntilMs : undefined),
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
   * Compressed copies made behind the answer, one body at a time (a whole read seeds a hundred
   * letters; compressing them before it answered cost seconds): each replaces its text-only copy
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
  const withSharedCopy = (load: Loader<CachedValue>): Loader<CachedValue> => {
    if (!sharedCache) return load;
    const loadThroughTier = withSharedTier(load, {
      store: sharedCache,
      rules,
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
   * Reads the archive index, whole or (when the last whole read found the upstream listing newest
   * first, by sending or by creation, and a whole read is not yet due) only its newest rows,
   * merged into the index: new rows, rows whose `updatedAt` moved, rows that left the head
   * (docs/upstream.md "How the archive is read and kept fresh"). Letters the rows carry are kept
   * as issue copies while they fit the cache, so a listed issue opens without a second call.
   */
  async function loadArchiveFromUpstream(_key: string, _waitUntil: WaitUntil | undefined, _client?: string, previous?: CachedValue) {
    const prior = previous?.kind === 'archive' ? previous.index : undefined;
    const time = now();
    if (prior && upstream.readPublicArchiveHead && prior.sync.order !== undefined && time - prior.sync.fullReadAt < resyncMs) {
      const merged = await refreshHead(prior, prior.sync.order);
      if (merged) return merged;
    }
    const contents = createContentKeeper(prior);
    // Complete only when nothing was cut off, dropped or paged oddly (else slugs are read by slug).
    if (upstream.readPublicArchive) {
      const read = await upstream.readPublicArchive(options.archiveMaxIssues, {
        reduceRow: contents.reduceRow,
        expectedRows: prior?.sync.listing.length,
      });
      const clean = read.dropped.count === 0 && read.findings.length === 0;
      const answeredAt = now();
      // Paging that did not work as configured leaves the listing unsure: no head refreshes then.
      // An archive cut off at ARCHIVE_MAX_ISSUES is listed as well as any: its newest rows are read.
      const pagedWell = read.findings.every((finding) => finding.problem === 'max_issues');
      const sync = { order: pagedWell ? read.order : undefined, fullReadAt: time, listing: read.issues.map((row) => row.source.id) };
      const value = indexValue(read.issues, answeredAt, clean && read.issues.length < options.archiveMaxIssues, sync, contents.store, true);
      await contents.seed(answeredAt, value);
      return value;
    }
    const rows = (await upstream.listAllPublicIssues(options.archiveMaxIssues)).map(contents.reduceRow);
    const answeredAt = now();
    const value = indexValue(
      rows,
      answeredAt,
      rows.length < options.archiveMaxIssues,
      { order: undefined, fullReadAt: time, listing: [] },
      contents.store,
      true,
    );
    await contents.seed(answeredAt, value);
    return value;
  }

  /**
   * The index refreshed from the upstream's newest rows: what the head holds replaces the index
   * down to its deepest known row (`placeHead`). `undefined` when the head cannot be placed (no
   * known row within a few pages, or the order changed): the caller reads the whole archive.
   */
  async function refreshHead(prior: ArchiveIndex, order: ListOrder): Promise<CachedValue | undefined> {
    const contents = createContentKeeper(prior);
    const known = new Set(prior.sync.listing);
    const head = await upstream.readPublicArchiveHead!({
      isKnownId: (id) => known.has(id),
      reduceRow: contents.reduceRow,
      validators: prior.sync.head,
      order,
    });
    // Stamped when the upstream answered (a read of many pages can outlast a short TTL).
    if (head.unchanged) return { kind: 'archive', index: prior, fetchedAt: now() };
    const placed = head.anchored && head.inOrder ? placeHead(prior.sync.listing, head.ids, head.dropped.ids) : undefined;
    if (placed === undefined) return undefined;
    const replaced = new Set([...head.ids, ...placed.gone]);
    const kept = [...head.issues, ...indexedRows(prior).filter((row) => !replaced.has(row.source.id))];
    const answeredAt = now();
    // A row the head could not read is an issue the index cannot show: by slug until the next whole read.
    const complete = prior.complete && head.dropped.count === 0 && kept.length < options.archiveMaxIssues;
    const value = indexValue(kept, answeredAt, complete, { ...prior.sync, listing: placed.listing, head: head.validators }, contents.store);
    await contents.seed(answeredAt, value);
    return value;
  }

  /** What the index keeps of one listed row: a summary when it is public, where it came from, and its words. */
  interface KeptRow {
    summary: IssueSummary | undefined;
    source: IssueSource;
    /** Its slot in the text store the read adds to (text-index.ts). */
    slot?: number | undefined;
  }

  /** The rows of an index, back in the form a refresh merges. */
  function indexedRows(index: ArchiveIndex): KeptRow[] {
    return index.all.map((summary) => ({
      summary,
      source: index.sources.get(summary.slug) ?? { id: summary.slug, updatedAt: null },
      slot: index.text?.slots.get(summary.slug),
    }));
  }

  /**
   * The cached index of `rows` (newest first, one per slug, public ones only), with its text
   * index in `store`; after a whole read (`whole`), compacted into a store of its own documents
   * (dropping what edits, unpublished letters and head refreshes left in the one it shared).
   */
  function indexValue(
    rows: readonly KeptRow[],
    fetchedAt: number,
    complete: boolean,
    sync: ArchiveSync,
    store: TextStore,
    whole = false,
  ): CachedValue {
    const bySlug = new Map<string, IssueSummary>();
    const sources = new Map<string, IssueSource>();
    const slots = new Map<string, number>();
    for (const { summary, source, slot } of rows) {
      if (summary === undefined || bySlug.has(summary.slug)) continue;
      bySlug.set(summary.slug, summary);
      sources.set(summary.slug, source);
      slots.set(summary.slug, slot ?? addSummary(store, summary, source.updatedAt));
    }
    let text: TextIndex = { store, slots };
    if (whole && worthCompacting(text)) text = compacted(text);
    return archiveValue([...bySlug.values()].sort(compareNewestFirst), fetchedAt, complete, { sources, sync, text });
  }

  /** Each index's positions by slug, made when an issue page first asks for its neighbours. */
  const positions = new WeakMap<ArchiveIndex, Map<string, number>>();

  /** The issues before and after `slug` in the index's order; none for a slug it does not list. */
  function neighboursIn(index: ArchiveIndex | undefined, slug: string): Neighbours {
    if (index === undefined) return NO_NEIGHBOURS;
    let bySlug = positions.get(index);
    if (bySlug === undefined) {
      bySlug = new Map(index.all.map((summary, at) => [summary.slug, at]));
      positions.set(index, bySlug);
    }
    const at = bySlug.get(slug);
    if (at === undefined) return NO_NEIGHBOURS;
    const newer = index.all[at - 1];
    const older = index.all[at + 1];
    return { newer: newer ? toIssueNeighbour(newer) : null, older: older ? toIssueNeighbour(older) : null };
  }

  /** An issue page's copy with other neighbours: the letter is the same, so no upstream call. */
  async function withNeighbours(copy: CachedValue & { kind: 'json' }, neighbours: Neighbours): Promise<CachedValue> {
    const envelope = JSON.parse(copy.rendered.body) as IssueBody;
    const next: IssueBody = { ok: true, data: { ...envelope.data, newer: neighbours.newer, older: neighbours.older } };
    return jsonValue(await renderJson(next, options.encodeBody), copy.fetchedAt, copy.version, neighboursKey(neighbours));
  }

  /**
   * Keeps the letters list rows carry, within what the cache can hold of them (so a read of
   * thousands of fat rows holds no more than that), and seeds them as issue copies once the read
   * is done. A copy already kept for the same `updatedAt` is left as it is.
   */
  function createContentKeeper(prior: ArchiveIndex | undefined) {
    const letters: { summary: IssueSummary; contentHtml: string; readingMinutes: number; version: string | undefined }[] = [];
    let bytes = 0;
    // The prior index's store, so the documents of rows that did not change are kept as they are.
    const store = prior?.text?.store ?? createTextStore();
    return {
      store,
      reduceRow(row: UpstreamIssue): KeptRow {
        const source = { id: row.id, updatedAt: row.updatedAt ?? null };
        // Re-checked here, not only asked of the upstream: a leaky upstream must not leak through us.
        if (!isPublicIssue(row)) return { summary: undefined, source };
        const listed = toIssueSummary(row);
        const version = row.updatedAt ?? undefined;
        // The same row as the prior index's (same `updatedAt`): its words are known already.
        const knownSlot = prior?.text?.slots.get(row.slug);
        const known = knownSlot === undefined ? undefined : store.docs[knownSlot];
        const unchanged = known !== undefined && version !== undefined && known.version === version;
        let slot: number;
        if (typeof row.contentHtml === 'string' && !(unchanged && known.letterWords !== null)) {
          slot = addSummary(store, listed, source.updatedAt, row.contentHtml);
        } else {
          slot = unchanged ? knownSlot! : addSummary(store, listed, source.updatedAt);
        }
        const letterCount = store.docs[slot]!.letterWords;
        const readingMinutes = letterCount === null ? null : readingMinutesOf(letterCount);
        const summary = readingMinutes === null ? listed : { ...listed, readingMinutes };
        if (typeof row.contentHtml === 'string' && bytes < budget.upstreamDataEntry) {
          const copy = cache.peek(ISSUE_KEY_PREFIX + row.slug);
          const same = copy?.kind === 'json' && version !== undefined && copy.version === version;
          if (!same) {
            bytes += stringBytes(row.contentHtml);
            letters.push({ summary, contentHtml: row.contentHtml, readingMinutes: readingMinutes ?? 1, version });
          }
        }
        return { summary, source, slot };
      },
      /**
       * Kept as text at once, so the read's answer never waits on compressing its letters: they are
       * compressed behind it. Each with its neighbours in the index the read made.
       */
      async seed(fetchedAt: number, value: CachedValue): Promise<void> {
        const index = value.kind === 'archive' ? value.index : undefined;
        for (const { summary, contentHtml, readingMinutes, version } of letters) {
          // Its own load is under way (it read this index for its neighbours): setting the key
          // would make lru-cache drop that load's copy for this one, still uncompressed.
          if (issuesLoading.has(summary.slug)) continue;
          const key = ISSUE_KEY_PREFIX + summary.slug;
          const neighbours = neighboursIn(index, summary.slug);
          const detail = toIssueDetail(summary, { contentHtml, readingMinutes }, neighbours);
          const copy = jsonValue(
            await renderJson({ ok: true, data: detail } satisfies IssueBody),
            fetchedAt,
            version,
            neighboursKey(neighbours),
          );
          cache.seed(key, copy);
          compressBehind(key, copy);
        }
        letters.length = 0;
      },
    };
  }
  const loadArchive = withSharedCopy(loadArchiveFromUpstream);

  /**
   * The categories with the number of public issues in each, counted in the archive index read
   * beside them (the cached one while fresh): the two are cached apart, so a count follows the
   * archive within a TTL (docs/contract.md "GET /api/categories").
   */
  async function loadCategoriesFromUpstream(_key: string, waitUntil: WaitUntil | undefined, client?: string) {
    // Both settled before answering: a failure of one does not leave the other running unseen.
    const [categoriesRead, archiveRead] = await Promise.allSettled([
      upstream.listCategories(),
      cache.read(ARCHIVE_KEY, loadArchive, waitUntil, { client }),
    ]);
    if (categoriesRead.status === 'rejected') throw categoriesRead.reason;
    if (archiveRead.status === 'rejected') throw archiveRead.reason;
    const listed = categoriesRead.value;
    const archive = archiveRead.value;
    if (archive.value?.kind !== 'archive') throw new Error('archive loader returned no index');
    const { byCategory } = archive.value.index;
    const bySlug = new Map<string, PublicCategory>();
    for (const category of listed) {
      if (!bySlug.has(category.slug)) bySlug.set(category.slug, toPublicCategory(category));
    }
    const data = [...bySlug.values()]
      .sort(compareByName)
      .map((category): CategoryListing => ({ ...category, count: byCategory.get(category.slug)?.length ?? 0 }));
    const envelope: CategoriesBody = { ok: true, data };
    return jsonValue(await renderJson(envelope, options.encodeBody), now());
  }
  const loadCategories = withSharedCopy(loadCategoriesFromUpstream);

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

  /** Slugs whose issue copy is being loaded now (see `seed`). */
  const issuesLoading = new Set<string>();
  /**
   * An issue the upstream does not have, or must not show, is remembered as a 404. A copy whose
   * row the index still lists with the same `updatedAt` is still right: it is kept without a
   * call. A slug the index lists is read by slug without the read budget: only reads the index
   * cannot justify (no index, or one cut off at ARCHIVE_MAX_ISSUES) are charged to it.
   */
  async function loadIssueFromUpstream(key: string, waitUntil: WaitUntil | undefined, client?: string, previous?: CachedValue) {
    const slug = key.slice(ISSUE_KEY_PREFIX.length);
    issuesLoading.add(slug);
    try {
      return await loadIssueCopy(slug, waitUntil, client, previous);
    } finally {
      issuesLoading.delete(slug);
    }
  }

  async function loadIssueCopy(
    slug: string,
    waitUntil: WaitUntil | undefined,
    client: string | undefined,
    previous: CachedValue | undefined,
  ) {
    let archive = cache.peek(ARCHIVE_KEY);
    // A copy is checked against an index at least as fresh as itself: a stale index is refreshed
    // first (joining a refresh under way). One that could not be refreshed is stale still: the
    // copy is read again rather than kept on its word.
    if (previous?.kind === 'json' && archive !== undefined && now() > archive.fetchedAt + rules.ttlMs) {
      archive = (await cache.read(ARCHIVE_KEY, loadArchive, waitUntil, { client, forceRefresh: true })).value;
    }
    const index = archive?.kind === 'archive' ? archive : undefined;
    const listed = index?.index.slugs.has(slug) === true;
    const version = index?.index.sources.get(slug)?.updatedAt;
    const trusted =
      index !== undefined &&
      previous !== undefined &&
      index.fetchedAt >= previous.fetchedAt &&
      isFresh(index.fetchedAt + rules.ttlMs, now());
    if (trusted && previous?.kind === 'json' && previous.version !== undefined && previous.version === version) {
      // The same letter; its neighbours may have changed (an issue published or unpublished beside it).
      const neighbours = neighboursIn(index.index, slug);
      const current = previous.neighbours === neighboursKey(neighbours) ? previous : await withNeighbours(previous, neighbours);
      const kept = await withCopies(current);
      return { ...kept, fetchedAt: index.fetchedAt };
    }
    // A copy gone from a complete index read after it was made: unpublished (or renamed). A slug
    // without a copy was looked up before this load (slug-lookup.ts): it is read by slug.
    if (previous && index && !listed && index.index.complete && index.fetchedAt >= previous.fetchedAt) {
      notFound.set(slug, true);
      return undefined;
    }
    if (!listed) chargeUnlistedRead(client);
    let issue: UpstreamIssue;
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
    const minutes = readingMinutesOf(typeof issue.contentHtml === 'string' ? countWords(issue.contentHtml) : 0);
    // Its neighbours are the index's: read (once, for every issue) when none is kept yet.
    const neighbourIndex =
      index?.index ?? (await cache.read(ARCHIVE_KEY, loadArchive, waitUntil, { client }).then(archiveOf, () => undefined));
    if (typeof issue.contentHtml === 'string' && neighbourIndex) addLetterToSearch(neighbourIndex, issue, issue.contentHtml);
    const neighbours = neighboursIn(neighbourIndex, slug);
    const summary = toIssueSummary(issue, typeof issue.contentHtml === 'string' ? minutes : null);
    const detail = toIssueDetail(summary, { contentHtml: issue.contentHtml ?? null, readingMinutes: minutes }, neighbours);
    const envelope: IssueBody = { ok: true, data: detail };
    return jsonValue(await renderJson(envelope, options.encodeBody), now(), issue.updatedAt ?? undefined, neighboursKey(neighbours));
  }

  const archiveOf = (read: { value: CachedValue | undefined }) => (read.value?.kind === 'archive' ? read.value.index : undefined);

  /**
   * A letter read by slug joins the search of the index that lists its row with the same
   * `updatedAt` when that row did not carry it (the index's next build keeps it, and its reading time).
   */
  function addLetterToSearch(index: ArchiveIndex, issue: UpstreamIssue & { slug: string }, letterHtml: string): void {
    const text = index.text;
    const doc = text && documentOf(text, issue.slug);
    if (!text || !doc || doc.letterWords !== null || doc.version !== (issue.updatedAt ?? null)) return;
    const summary = index.all.find((candidate) => candidate.slug === issue.slug);
    if (summary) text.slots.set(issue.slug, addSummary(text.store, summary, doc.version, letterHtml));
  }

  /**
   * The copy of an issue is older than the index says its row is: the index, read no earlier than
   * the copy, shows another `updatedAt` (an edit a refresh of the archive saw). It is not served.
   */
  function outdatedByIndex(slug: string, copy: CachedValue | undefined): boolean {
    const archive = cache.peek(ARCHIVE_KEY);
    if (archive?.kind !== 'archive' || copy?.kind !== 'json' || copy.version === undefined || archive.fetchedAt < copy.fetchedAt)
      return false;
    const version = archive.index.sources.get(slug)?.updatedAt;
    return version !== undefined && version !== null && version !== copy.version;
  }

  /**
   * Issues are loaded through the shared tier, whose copy another isolate or instance stored; one
   * older than the index (an edit seen since) is read again from the upstream and replaces it.
   */
  const loadIssueThroughTier = withSharedCopy(loadIssueFromUpstream);
  const loadIssue: Loader<CachedValue> = async (key, waitUntil, client, previous) => {
    const value = await loadIssueThroughTier(key, waitUntil, client, previous);
    if (sharedCache === undefined || !outdatedByIndex(key.slice(ISSUE_KEY_PREFIX.length), value)) return value;
    const fresh = await loadIssueFromUpstream(key, waitUntil, client, value);
    await (fresh === undefined ? sharedCache.delete(key) : sharedCache.put(key, encodeSharedEntry(fresh))).catch(() => undefined);
    return fresh && withCopies(fresh);
  };

  /**
   * A stale copy says how old it is, so a browser or CDN does not count its `max-age` afresh
   * (RFC 9111 §5.1); a fresh one is within `max-age` and needs no `Age`.
   */
  function ageOf(state: CacheState, value: CachedValue): number | undefined {
    return state === 'STALE' ? Math.max(0, Math.floor((now() - value.fetchedAt) / 1000)) : undefined;
  }

  /** A stale answer is the failing upstream's doing while a spell is under way (counted into it), else a refresh's. */
  function staleReasonOf(state: CacheState): StaleReason | undefined {
    return state === 'STALE' ? (options.spells?.affectedRead() ?? 'revalidating') : undefined;
  }

  /** `read`, with an upstream failure it answers with counted into the spell under way. */
  async function counted<R>(read: Promise<R>): Promise<R> {
    try {
      return await read;
    } catch (error) {
      if (error instanceof UpstreamError && !(error instanceof ReadBudgetExceeded)) options.spells?.affectedRead();
      throw error;
    }
  }

  async function readJson<T>(
    key: string,
    load: Loader<CachedValue>,
    waitUntil: WaitUntil | undefined,
    client: string | undefined,
    forceRefresh = false,
  ): Promise<PublicRead<T> | undefined> {
    const { value, state } = await cache.read(key, load, waitUntil, { client, forceRefresh });
    if (value?.kind !== 'json') return undefined;
    return { rendered: value.rendered, state, ageSeconds: ageOf(state, value), staleReason: staleReasonOf(state) };
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

  /** The issue's copy was made before a complete index that no longer lists it: it was unpublished. */
  function droppedFromIndex(key: string, slug: string): boolean {
    const archive = cache.peek(ARCHIVE_KEY);
    if (archive?.kind !== 'archive' || !archive.index.complete || archive.index.slugs.has(slug)) return false;
    const copy = cache.peek(key);
    return copy !== undefined && archive.fetchedAt >= copy.fetchedAt;
  }

  async function archiveIndex(waitUntil: WaitUntil | undefined, client?: string): Promise<ArchiveIndexRead> {
    const { value, state } = await cache.read(ARCHIVE_KEY, loadArchive, waitUntil, { client });
    if (value?.kind !== 'archive') throw new Error('archive loader returned no index');
    return { index: value.index, state, ageSeconds: ageOf(state, value), staleReason: staleReasonOf(state) };
  }

  async function issue(slug: string, waitUntil: WaitUntil | undefined, client: string | undefined): Promise<PublicRead<IssueBody>> {
    const key = ISSUE_KEY_PREFIX + slug;
    if (notFound.has(slug)) throw noSuchIssue();
    // A copy of an issue the index no longer lists (unpublished) is not served; any other slug
    // is looked up in the archive index first, so an unknown slug never reaches the upstream.
    if (cache.has(key) ? droppedFromIndex(key, slug) : (await lookUpSlug(slug, { waitUntil, client })) === 'absent') throw noSuchIssue();
    // A copy the index shows edited since is read again now, not served while it refreshes.
    const read = await readJson<IssueBody>(key, loadIssue, waitUntil, client, outdatedByIndex(slug, cache.peek(key)));
    if (!read) throw noSuchIssue();
    return read;
  }

  return {
    archiveIndex: (waitUntil, client) => counted(archiveIndex(waitUntil, client)),

    async archivePage(query, waitUntil, client) {
      const { index, state, ageSeconds, staleReason } = await counted(archiveIndex(waitUntil, client));
      const rendered = pages.get(index, query) ?? (await pages.render(index, query));
      return { rendered, state, ageSeconds, staleReason };
    },

    issue: (slug, waitUntil, client) => counted(issue(slug, waitUntil, client)),

    async refreshFromUpstream(waitUntil) {
      // Joins a load under way; a failure leaves the copies as they were (stale-if-error), and
      // a copy handed back stale says the refresh failed.
      const archive = await cache.read(ARCHIVE_KEY, publishing(loadArchiveFromUpstream), waitUntil, { forceRefresh: true });
      const categories = await cache.read(CATEGORIES_KEY, publishing(loadCategoriesFromUpstream), waitUntil, { forceRefresh: true });
      if (archive.state === 'STALE' || categories.state === 'STALE')
        throw new Error('the upstream refresh failed; the copies stay as they were');
      if (archive.value?.kind !== 'archive') throw new Error('archive loader returned no index');
      return { issues: archive.value.index.all.length };
    },

    async freshArchiveIndex({ load = true, upstream: mayReadUpstream = true } = {}) {
      const fresh = (value: CachedValue | undefined) =>
        value?.kind === 'archive' && isFresh(value.fetchedAt + rules.ttlMs, now())
          ? { index: value.index, fetchedAt: value.fetchedAt }
          : undefined;
      const kept = fresh(cache.peek(ARCHIVE_KEY));
      if (kept || !load) return kept;
      if (sharedCache) {
        // The shared copy when it is fresh (another instance read it); asked first, so that a
        // stale one does not start a refresh behind the answer (withSharedTier) besides this one.
        const entry = await sharedCache.get(ARCHIVE_KEY).catch(() => undefined);
        if (entry !== undefined && isFresh(entry.fetchedAt + rules.ttlMs, now())) {
          return fresh((await cache.read(ARCHIVE_KEY, loadArchive, undefined, { forceRefresh: true })).value);
        }
        if (!mayReadUpstream) return undefined;
      }
      // A failed load hands back the copy it had, stale: no answer then.
      return fresh((await cache.read(ARCHIVE_KEY, publishing(loadArchiveFromUpstream), undefined, { forceRefresh: true })).value);
    },

    async categories(waitUntil, client) {
      const read = await counted(readJson<CategoriesBody>(CATEGORIES_KEY, loadCategories, waitUntil, client));
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
      issue(slug) {
        const key = ISSUE_KEY_PREFIX + slug;
        return notFound.has(slug) || droppedFromIndex(key, slug) || outdatedByIndex(slug, cache.peek(key)) ? undefined : freshJson(key);
      },
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
