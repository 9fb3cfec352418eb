import { LRUCache } from 'lru-cache';
import { ApiError } from '../http/errors.js';
import { SLUG_PATTERN, SLUG_RULE } from '../slug.js';
import type { ArchivePageBody, CategoriesBody, IssueBody, IssueDetail, IssueSummary } from '../public-shapes.js';
import { placeHead, type ListOrder } from '../upstream/archive.js';
import type { FailureSpells, StaleReason } from '../upstream/failure-policy.js';
import type { ArchiveRequest } from '../routes/archive-query.js';
import type { UpstreamClient } from '../upstream/newsletter-api.js';
import type { UpstreamIssue } from '../upstream/schemas.js';
import { UpstreamError } from '../upstream/transport.js';
import * as allowList from './allow-list.js';
import { freshnessRulesOf, splitMemoryBudget, stringBytes, type CachePolicies } from './cache-policies.js';
import { archiveValue, decodeSharedEntry, encodeSharedEntry, jsonValue } from './cached-value.js';
import type { ArchiveIndex, ArchiveSync, CachedValue, IndexCopy, IssueSource } from './cached-value.js';
import { countWords, readingMinutesOf } from './letter-text.js';
import { ReadBudgetExceeded, type ReadBudget } from './read-budget.js';
import { andThen, createReadThroughCache, isFresh } from './read-through-cache.js';
import type { CacheState, Loader, MaybePromise, ReadResult, ReadThroughCacheOptions, Requester, WaitUntil } from './read-through-cache.js';
import { renderedBytes, renderJson, withEncodedCopies, type BodyEncoder, type RenderedJson } from './rendered-json.js';
import { withSharedTier, type SharedTier } from './shared-tier.js';
import { addSummary, compacted, createTextStore, documentOf, search, worthCompacting } from './text-index.js';

export interface PublicRead<T = unknown> {
  rendered: RenderedJson;
  state: CacheState;
  ageSeconds?: number;
  staleReason?: StaleReason | undefined;
  readonly envelope?: T;
}

export interface PublicReadsOptions extends Pick<ReadThroughCacheOptions<CachedValue>, 'now' | 'onLoadError' | 'onTooLarge' | 'metrics'> {
  upstream: UpstreamClient;
  policies: CachePolicies;
  maxBytes: number;
  notFoundTtlSeconds: number;
  archiveMaxIssues: number;
  archiveResyncSeconds: number;
  sharedCache?: SharedTier;
  readBudget?: ReadBudget;
  indexRefreshMinIntervalMs: number;
  encodeBody?: BodyEncoder;
  spells?: Pick<FailureSpells, 'loaded' | 'affectedRead'>;
}

export type PublicReads = ReturnType<typeof createPublicReads>;

export type ArchiveQuery = Omit<ArchiveRequest, 'format'>;

export function archivePageOf(index: ArchiveIndex, query: ArchiveQuery): { issues: IssueSummary[]; total: number } {
  const listed = query.category === undefined ? index.all : (index.byCategory.get(query.category) ?? []);
  const list = query.q === undefined ? listed : search(index.text, listed, query.q.split(' '));
  return { issues: list.slice(query.offset, query.offset + query.limit), total: list.length };
}

type Render<F> = (index: ArchiveIndex, query: ArchiveQuery, format: F) => Promise<RenderedJson>;

// A page (or a feed, by format) is kept while its index is current; a search's is not: anyone could fill this cache with them.
export function createIndexRenders<F extends string | undefined>(maxBytes: number, render: Render<F>) {
  const renders = new LRUCache<string, { index: ArchiveIndex; rendered: RenderedJson }>({
    maxSize: Math.max(1, maxBytes),
    sizeCalculation: (render) => renderedBytes(render.rendered),
  });
  const pageKeys = new WeakMap<ArchiveQuery, string>();
  return {
    rendered(index: ArchiveIndex, query: ArchiveQuery, format: F): MaybePromise<RenderedJson> {
      if (query.q !== undefined) return render(index, query, format);
      let pageKey = pageKeys.get(query);
      if (pageKey === undefined) pageKeys.set(query, (pageKey = `${query.limit}:${query.offset}:${query.category ?? ''}`));
      const key = format === undefined ? pageKey : `${format}:${pageKey}`;
      const kept = renders.get(key);
      if (kept?.index === index) return kept.rendered;
      return render(index, query, format).then((rendered) => {
        renders.set(key, { index, rendered });
        return rendered;
      });
    },
    stats: () => ({ size: renders.size, calculatedSize: renders.calculatedSize }),
  };
}

const NOT_FOUND_MAX_ENTRIES = 20_000;
const ARCHIVE_KEY = 'archive';
const CATEGORIES_KEY = 'categories';
const ISSUE_KEY_PREFIX = 'issue:';

const noSuchIssue = () => new ApiError('NOT_FOUND', { message: 'No public issue has this slug.' });
const noIndex = () => new Error('archive loader returned no index');

type KeptRow = { summary: IssueSummary | undefined; source: IssueSource; slot?: number | undefined };

const neighboursKey = (neighbours: allowList.Neighbours) => JSON.stringify([neighbours.newer, neighbours.older]);
const renderIssue = (data: IssueDetail, encode?: BodyEncoder) => renderJson({ ok: true, data } satisfies IssueBody, encode);
const indexOf = (value: CachedValue | undefined) => (value?.kind === 'archive' ? value : undefined);

type Loading = { waitUntil: WaitUntil | undefined; client: string | undefined };
const LOADING: Requester<Loading> = { waitUntil: (loading) => loading.waitUntil, client: (loading) => loading.client };

export function createPublicReads(options: PublicReadsOptions) {
  const { upstream, now, sharedCache, encodeBody } = options;
  const resyncMs = options.archiveResyncSeconds * 1000;
  const budget = splitMemoryBudget(options.maxBytes);
  const rulesOf = (read: keyof CachePolicies) => freshnessRulesOf(options.policies[read]);
  const rules = { archive: rulesOf('archive'), categories: rulesOf('categories'), issue: rulesOf('issue') };
  const archiveFresh = (fetchedAt: number) => isFresh(fetchedAt + rules.archive.ttlMs, now());

  // Apart, so a slug scan can neither reach the upstream twice for one slug nor evict good entries (docs/contract.md).
  const notFound = new LRUCache<string, true>({
    max: NOT_FOUND_MAX_ENTRIES,
    maxSize: budget.notFound,
    sizeCalculation: (_value, slug) => stringBytes(slug),
    ttl: options.notFoundTtlSeconds * 1000,
    perf: { now },
    ttlResolution: 0,
  });

  // A slug's fresh hit, answered with one lookup while no copy changes; only slugs that passed the pattern (checked after it) are in it.
  const freshHits = new Map<string, { read: PublicRead<IssueBody>; key: string; staleAt: number }>();
  const cache = createReadThroughCache<CachedValue>({
    rulesFor: (key) => (key === ARCHIVE_KEY ? rules.archive : key === CATEGORIES_KEY ? rules.categories : rules.issue),
    maxBytes: budget.upstreamData,
    maxEntryBytes: budget.upstreamDataEntry,
    notFoundTtlMs: options.notFoundTtlSeconds * 1000,
    now,
    sizeOf: (value) => (value.kind === 'archive' ? value.index.size : value.size),
    fetchedAtOf: (value) => value.fetchedAt,
    onLoadError: options.onLoadError,
    onLoaded: (_key, value) => options.spells?.loaded(value.fetchedAt),
    retryAtOf: (error) => (error instanceof UpstreamError ? error.heldUntilMs : undefined),
    onTooLarge: options.onTooLarge,
    onChange: () => freshHits.clear(),
    metrics: options.metrics,
  });
  const pages = createIndexRenders(budget.renderedPages, (index, query) => {
    const { issues, total } = archivePageOf(index, query);
    const { limit, offset } = query;
    const nextOffset = offset + limit < total ? offset + limit : null;
    const meta = { total, limit, offset, nextOffset, previousOffset: offset > 0 ? Math.max(0, Math.min(offset, total) - limit) : null };
    // A search's page is not compressed either: it is not kept.
    return renderJson({ ok: true, data: issues, meta } satisfies ArchivePageBody, query.q === undefined ? encodeBody : undefined);
  });

  async function withCopies(value: CachedValue): Promise<CachedValue> {
    if (value.kind !== 'json' || encodeBody === undefined) return value;
    const rendered = await withEncodedCopies(value.rendered, encodeBody).catch(() => value.rendered);
    return rendered === value.rendered ? value : jsonValue(rendered, value.fetchedAt, value.version, value.neighbours);
  }

  // One body at a time (a whole read seeds hundreds of letters), each replacing its text-only copy while that is still the fresh one.
  let compressing: Promise<void> = Promise.resolve();
  function compressBehind(key: string, value: CachedValue): void {
    if (encodeBody === undefined) return;
    compressing = compressing
      .then(async () => {
        if (!cache.holds(key, value)) return;
        const next = await withCopies(value);
        // Only a copy with compressed bodies replaces it: a replace overtakes a load under way (a read by slug of an edit).
        if (next !== value && next.kind === 'json' && next.rendered.encoded?.length) cache.replace(key, value, next);
      })
      .catch((error: unknown) => options.onLoadError?.(key, error));
  }

  const tierCodec = { now, encode: encodeSharedEntry, decode: decodeSharedEntry, onRefreshError: options.onLoadError };
  function withSharedCopy(load: Loader<CachedValue>, keyRules = rules.issue): Loader<CachedValue> {
    if (!sharedCache) return load;
    const loadThroughTier = withSharedTier(load, { ...tierCodec, store: sharedCache, rules: keyRules });
    return async (...args) => {
      const value = await loadThroughTier(...args);
      return value && withCopies(value);
    };
  }

  // Reads the upstream whatever the shared copy's age, building on the copy held here or the shared one (so a head read stays possible).
  const publishing =
    (load: Loader<CachedValue>): Loader<CachedValue> =>
    async (key, waitUntil, client, previous) => {
      const entry = previous === undefined ? await sharedCache?.get(key).catch(() => undefined) : undefined;
      const value = await load(key, waitUntil, client, previous ?? (entry && decodeSharedEntry(entry)));
      if (value !== undefined) await sharedCache?.put(key, encodeSharedEntry(value));
      return value;
    };

  async function loadArchiveFromUpstream(_key: string, _waitUntil: WaitUntil | undefined, _client?: string, previous?: CachedValue) {
    const prior = indexOf(previous)?.index;
    const time = now();
    if (prior?.sync.order !== undefined && upstream.readPublicArchiveHead && time - prior.sync.fullReadAt < resyncMs) {
      const merged = await refreshHead(prior, prior.sync.order);
      if (merged) return merged;
    }
    const { reduceRow, build } = createIndexBuilder(prior);
    if (!upstream.readPublicArchive) {
      const rows = (await upstream.listAllPublicIssues(options.archiveMaxIssues)).map(reduceRow);
      return build(rows, rows.length < options.archiveMaxIssues, { order: undefined, fullReadAt: time, ids: [] }, true);
    }
    const read = await upstream.readPublicArchive(options.archiveMaxIssues, { reduceRow, expectedRows: prior?.sync.ids.length });
    const rows = read.issues;
    // Paging that did not work as configured leaves the listing unsure (no head refreshes), the index incomplete.
    const pagedWell = read.findings.every((finding) => finding.problem === 'max_issues');
    const sync = { order: pagedWell ? read.order : undefined, fullReadAt: time, ids: rows.map((row) => row.source.id) };
    const complete = read.dropped.count === 0 && read.findings.length === 0 && rows.length < options.archiveMaxIssues;
    return build(rows, complete, sync, true);
  }

  async function refreshHead(prior: ArchiveIndex, order: ListOrder): Promise<CachedValue | undefined> {
    const { reduceRow, build } = createIndexBuilder(prior);
    const known = new Set(prior.sync.ids);
    const head = await upstream.readPublicArchiveHead!({ isKnownId: (id) => known.has(id), reduceRow, validators: prior.sync.head, order });
    if (head.unchanged) return { kind: 'archive', index: prior, fetchedAt: now() };
    const placed = head.anchored && head.inOrder ? placeHead(prior.sync.ids, head.ids, head.dropped.ids) : undefined;
    if (placed === undefined) return undefined;
    const replaced = new Set([...head.ids, ...placed.gone]);
    const kept: KeptRow[] = [...head.issues];
    for (const summary of prior.all) {
      const source = prior.sources.get(summary.slug) ?? { id: summary.slug, updatedAt: null };
      if (!replaced.has(source.id)) kept.push({ summary, source, slot: prior.text.slots.get(summary.slug) });
    }
    // A row the head could not read is read by slug until the next whole read.
    const complete = prior.complete && head.dropped.count === 0 && kept.length < options.archiveMaxIssues;
    return build(kept, complete, { ...prior.sync, ids: placed.listing, head: head.validators });
  }

  function neighboursIn(index: ArchiveIndex | undefined, slug: string): allowList.Neighbours {
    const at = index?.positions.get(slug);
    const near = (summary: IssueSummary | undefined) => (summary ? allowList.toIssueNeighbour(summary) : null);
    return at === undefined ? { newer: null, older: null } : { newer: near(index!.all[at - 1]), older: near(index!.all[at + 1]) };
  }

  // Builds an index from the rows read, keeping the letters they carry (within one cache entry's bytes) to seed as issue copies.
  function createIndexBuilder(prior: ArchiveIndex | undefined) {
    const letters: { summary: IssueSummary; contentHtml: string; readingMinutes: number; version: string | undefined }[] = [];
    let bytes = 0;
    const store = prior?.text.store ?? createTextStore();
    return {
      reduceRow(row: UpstreamIssue): KeptRow {
        const source = { id: row.id, updatedAt: row.updatedAt ?? null };
        if (!allowList.isPublicIssue(row)) return { summary: undefined, source };
        const listed = allowList.toIssueSummary(row);
        const version = row.updatedAt ?? undefined;
        const knownSlot = prior?.text.slots.get(row.slug);
        const known = knownSlot === undefined ? undefined : store.docs[knownSlot];
        const letter = typeof row.contentHtml === 'string' ? row.contentHtml : undefined;
        // A version both sides lack is no proof the row is unchanged: null and undefined never match.
        const unchanged = known !== undefined && known.version === version && (letter === undefined || known.letterWords !== null);
        const slot = unchanged ? knownSlot! : addSummary(store, listed, source.updatedAt, letter);
        const letterCount = store.docs[slot]!.letterWords;
        const readingMinutes = letterCount === null ? null : readingMinutesOf(letterCount);
        const summary = readingMinutes === null ? listed : { ...listed, readingMinutes };
        if (letter !== undefined && bytes < budget.upstreamDataEntry) {
          const copy = cache.peek(ISSUE_KEY_PREFIX + row.slug);
          if (!(copy?.kind === 'json' && copy.version === source.updatedAt)) {
            bytes += stringBytes(letter);
            letters.push({ summary, contentHtml: letter, readingMinutes: readingMinutes ?? 1, version });
          }
        }
        return { summary, source, slot };
      },
      async build(rows: readonly KeptRow[], complete: boolean, sync: ArchiveSync, whole = false): Promise<CachedValue> {
        const fetchedAt = now();
        const bySlug = new Map<string, IssueSummary>();
        const sources = new Map<string, IssueSource>();
        const slots = new Map<string, number>();
        for (const { summary, source, slot } of rows) {
          if (summary === undefined || bySlug.has(summary.slug)) continue;
          bySlug.set(summary.slug, summary);
          sources.set(summary.slug, source);
          slots.set(summary.slug, slot ?? addSummary(store, summary, source.updatedAt));
        }
        const all = [...bySlug.values()].sort(allowList.compareNewestFirst);
        const text = { store, slots };
        const kept = whole && worthCompacting(text) ? compacted(text) : text;
        const value = archiveValue(all, fetchedAt, complete, { sources, sync, text: kept });
        for (const { summary, contentHtml, readingMinutes, version } of letters.splice(0)) {
          // Its own load is under way: setting the key would overtake it, and its copy would not be kept.
          if (issuesLoading.has(summary.slug)) continue;
          const key = ISSUE_KEY_PREFIX + summary.slug;
          const neighbours = neighboursIn(indexOf(value)?.index, summary.slug);
          const data = allowList.toIssueDetail(summary, { contentHtml, readingMinutes }, neighbours);
          const copy = jsonValue(await renderIssue(data), fetchedAt, version, neighboursKey(neighbours));
          cache.seed(key, copy);
          compressBehind(key, copy);
        }
        return value;
      },
    };
  }
  const loadArchive = withSharedCopy(loadArchiveFromUpstream, rules.archive);

  const readArchive = (waitUntil: WaitUntil | undefined, client: string | undefined, forceRefresh = false) =>
    cache.read(ARCHIVE_KEY, loadArchive, { waitUntil, client }, LOADING, forceRefresh);

  async function loadCategoriesFromUpstream(_key: string, waitUntil: WaitUntil | undefined, client?: string) {
    const [categoriesRead, archiveRead] = await Promise.allSettled([upstream.listCategories(), readArchive(waitUntil, client)]);
    if (categoriesRead.status === 'rejected') throw categoriesRead.reason;
    if (archiveRead.status === 'rejected') throw archiveRead.reason;
    const archive = indexOf(archiveRead.value.value);
    if (archive === undefined) throw noIndex();
    // Reversed, so the first row with a slug is the one kept; the sort below makes the order.
    const bySlug = new Map([...categoriesRead.value].reverse().map((category) => [category.slug, allowList.toPublicCategory(category)]));
    const data = [...bySlug.values()]
      .sort(allowList.compareByName)
      .map((category) => ({ ...category, count: archive.index.byCategory.get(category.slug)?.length ?? 0 }));
    return jsonValue(await renderJson({ ok: true, data } satisfies CategoriesBody, encodeBody), now());
  }
  const loadCategories = withSharedCopy(loadCategoriesFromUpstream, rules.categories);

  // What an index read no earlier than `copy` says of it: gone (unpublished or renamed), or listed with the same or another `updatedAt`.
  function indexSays(slug: string, copy: CachedValue | undefined, archive = indexOf(cache.peek(ARCHIVE_KEY))) {
    if (archive === undefined || copy === undefined || archive.fetchedAt < copy.fetchedAt) return undefined;
    if (archive.index.complete && !archive.index.positions.has(slug)) return 'dropped';
    const version = archive.index.sources.get(slug)?.updatedAt;
    if (copy.kind !== 'json' || copy.version === undefined || version === undefined || version === null) return undefined;
    return version === copy.version ? 'same' : 'edited';
  }

  const issuesLoading = new Set<string>();

  const gone = (slug: string) => void (freshHits.delete(slug), notFound.set(slug, true));

  async function loadIssueFromUpstream(key: string, waitUntil: WaitUntil | undefined, client?: string, previous?: CachedValue) {
    const slug = key.slice(ISSUE_KEY_PREFIX.length);
    issuesLoading.add(slug);
    try {
      let archive = cache.peek(ARCHIVE_KEY);
      if (previous?.kind === 'json' && archive !== undefined && !archiveFresh(archive.fetchedAt)) {
        archive = (await readArchive(waitUntil, client, true)).value;
      }
      const index = indexOf(archive);
      const verdict = indexSays(slug, previous, index);
      if (verdict === 'same' && previous?.kind === 'json' && archiveFresh(index!.fetchedAt)) {
        const neighbours = neighboursIn(index!.index, slug);
        const current = previous.neighbours === neighboursKey(neighbours) ? previous : await withNeighbours(previous, neighbours);
        return { ...(await withCopies(current)), fetchedAt: index!.fetchedAt };
      }
      if (verdict === 'dropped') return gone(slug);
      if (!index?.index.positions.has(slug)) options.readBudget?.take(client);
      const issue = await upstream.getIssueBySlug(slug).catch((error: unknown) => {
        if (error instanceof UpstreamError && error.kind === 'not_found') return undefined;
        throw error;
      });
      // A draft, private or renamed issue is a 404 even when the upstream returned it.
      if (issue === undefined || !allowList.isPublicIssue(issue) || issue.slug !== slug) return gone(slug);
      const letter = typeof issue.contentHtml === 'string' ? issue.contentHtml : undefined;
      const minutes = readingMinutesOf(letter === undefined ? 0 : countWords(letter));
      const kept = index ?? indexOf((await Promise.resolve(readArchive(waitUntil, client)).catch(() => undefined))?.value);
      const neighbourIndex = kept?.index;
      if (letter !== undefined && neighbourIndex) addLetterToSearch(neighbourIndex, issue, letter);
      const neighbours = neighboursIn(neighbourIndex, slug);
      const summary = allowList.toIssueSummary(issue, letter === undefined ? null : minutes);
      const data = allowList.toIssueDetail(summary, { contentHtml: issue.contentHtml ?? null, readingMinutes: minutes }, neighbours);
      return jsonValue(await renderIssue(data, encodeBody), now(), issue.updatedAt ?? undefined, neighboursKey(neighbours));
    } finally {
      issuesLoading.delete(slug);
    }
  }

  async function withNeighbours(copy: CachedValue & { kind: 'json' }, neighbours: allowList.Neighbours): Promise<CachedValue> {
    const { data } = JSON.parse(copy.rendered.body) as IssueBody;
    return jsonValue(await renderIssue({ ...data, ...neighbours }, encodeBody), copy.fetchedAt, copy.version, neighboursKey(neighbours));
  }

  function addLetterToSearch(index: ArchiveIndex, issue: UpstreamIssue & { slug: string }, letterHtml: string): void {
    const doc = documentOf(index.text, issue.slug);
    if (!doc || doc.letterWords !== null || doc.version !== (issue.updatedAt ?? null)) return;
    const summary = index.all.find((candidate) => candidate.slug === issue.slug);
    if (summary) index.text.slots.set(issue.slug, addSummary(index.text.store, summary, doc.version, letterHtml));
  }

  // A shared copy older than the index (an edit seen since) is read again and replaced.
  const loadIssueThroughTier = withSharedCopy(loadIssueFromUpstream);
  const loadIssue: Loader<CachedValue> = async (key, waitUntil, client, previous) => {
    const value = await loadIssueThroughTier(key, waitUntil, client, previous);
    if (sharedCache === undefined || indexSays(key.slice(ISSUE_KEY_PREFIX.length), value) !== 'edited') return value;
    const fresh = await loadIssueFromUpstream(key, waitUntil, client, value);
    await (fresh === undefined ? sharedCache.delete(key) : sharedCache.put(key, encodeSharedEntry(fresh))).catch(() => undefined);
    return fresh && withCopies(fresh);
  };

  // A stale copy says how old it is (RFC 9111 §5.1), and why: a failure spell under way, else a refresh.
  const ageOf = (state: CacheState, value: CachedValue) =>
    state === 'STALE' ? Math.max(0, Math.floor((now() - value.fetchedAt) / 1000)) : undefined;
  const staleReasonOf = (state: CacheState): StaleReason | undefined =>
    state === 'STALE' ? (options.spells?.affectedRead() ?? 'revalidating') : undefined;

  const counted = <R>(read: MaybePromise<R>) => (read instanceof Promise ? read.catch(countAffected) : read);
  function countAffected(error: unknown): never {
    if (error instanceof UpstreamError && !(error instanceof ReadBudgetExceeded)) options.spells?.affectedRead();
    throw error;
  }

  // Hoisted, as are the other steps of a cached hit: a closure made per request is a cost every hit pays.
  function publicReadOf<T>({ value, state }: ReadResult<CachedValue>): PublicRead<T> | undefined {
    if (value?.kind !== 'json') return undefined;
    return { rendered: value.rendered, state, ageSeconds: ageOf(state, value), staleReason: staleReasonOf(state) };
  }

  // A slug a complete index lacks may only be newer than it, which one refresh settles (docs/contract.md "Availability under abuse").
  let indexRefresh: Promise<IndexCopy | undefined> | undefined;
  let lastIndexRefreshAt = Number.NEGATIVE_INFINITY;
  async function isUnlisted(slug: string, request: unknown, requester: Requester<unknown> | undefined) {
    const copy = await keptIndex(request, requester).catch(() => undefined);
    if (!copy?.index.complete || copy.index.positions.has(slug)) return false;
    const time = now();
    if (indexRefresh === undefined && time - Math.max(lastIndexRefreshAt, copy.fetchedAt) >= options.indexRefreshMinIntervalMs) {
      lastIndexRefreshAt = time;
      // Past any shared tier; a failed refresh hands back the copy it had (stale-if-error): no answer.
      indexRefresh = Promise.resolve(cache.read(ARCHIVE_KEY, loadArchiveFromUpstream, request, requester, true))
        .then(({ value }) => (value?.kind === 'archive' && value.fetchedAt >= time ? value : undefined))
        .catch(() => undefined)
        .finally(() => {
          indexRefresh = undefined;
        });
    }
    const newer = indexRefresh === undefined ? copy : await indexRefresh;
    return newer?.index.complete === true && !newer.index.positions.has(slug);
  }

  // An issue read keeps a kept index fresh but never loads one cold: without one, a slug is read by slug.
  const keptIndex = async (request: unknown, requester: Requester<unknown> | undefined) =>
    cache.has(ARCHIVE_KEY) ? indexOf((await cache.read(ARCHIVE_KEY, loadArchive, request, requester)).value) : undefined;

  function archiveIndex<R>(request?: R, requester?: Requester<R>) {
    return andThen(cache.read(ARCHIVE_KEY, loadArchive, request, requester), indexReadOf);
  }
  function indexReadOf({ value, state }: ReadResult<CachedValue>) {
    if (value?.kind !== 'archive') throw noIndex();
    return { index: value.index, state, ageSeconds: ageOf(state, value), staleReason: staleReasonOf(state) };
  }

  function pageOf({ index, state, ageSeconds, staleReason }: ReturnType<typeof indexReadOf>, query: ArchiveQuery) {
    const rendered = pages.rendered(index, query, undefined);
    if (!(rendered instanceof Promise)) return { rendered, state, ageSeconds, staleReason };
    return rendered.then((page) => ({ rendered: page, state, ageSeconds, staleReason }));
  }

  // A copy the index shows edited since is read again now, not served while it refreshes.
  function readIssue(slug: string, key: string, copy: CachedValue | undefined, request: unknown, requester?: Requester<unknown>) {
    const verdict = indexSays(slug, copy);
    if (verdict === 'dropped') return Promise.reject(noSuchIssue());
    const result = cache.read(key, loadIssue, request, requester, verdict === 'edited');
    if (result instanceof Promise) return result.then(issueReadOf);
    const read = issueReadOf(result);
    if (result.staleAt !== undefined && !(read instanceof Promise)) freshHits.set(slug, { read, key, staleAt: result.staleAt });
    return read;
  }
  const issueReadOf = (result: ReadResult<CachedValue>) => publicReadOf<IssueBody>(result) ?? Promise.reject(noSuchIssue());
  const categoriesReadOf = (result: ReadResult<CachedValue>) => publicReadOf<CategoriesBody>(result)!;

  function issue(slug: string, request: unknown, requester: Requester<unknown> | undefined): MaybePromise<PublicRead<IssueBody>> {
    const kept = freshHits.get(slug);
    if (kept !== undefined && isFresh(kept.staleAt, now())) return cache.hit(kept.key, kept.read);
    if (!SLUG_PATTERN.test(slug)) throw new ApiError('VALIDATION_ERROR', { details: [{ path: 'slug', message: `slug ${SLUG_RULE}` }] });
    const key = ISSUE_KEY_PREFIX + slug;
    if (notFound.has(slug)) return Promise.reject(noSuchIssue());
    const copy = cache.peek(key);
    if (copy !== undefined || cache.has(key)) return readIssue(slug, key, copy, request, requester);
    return isUnlisted(slug, request, requester).then((unlisted) =>
      unlisted ? Promise.reject(noSuchIssue()) : readIssue(slug, key, cache.peek(key), request, requester),
    );
  }

  const freshIndex = (value: CachedValue | undefined) => (value?.kind === 'archive' && archiveFresh(value.fetchedAt) ? value : undefined);

  return {
    archiveIndex: <R>(request?: R, requester?: Requester<R>) => counted(archiveIndex(request, requester)),

    archivePage<R>(query: ArchiveQuery, request?: R, requester?: Requester<R>): MaybePromise<PublicRead<ArchivePageBody>> {
      const read = counted(archiveIndex(request, requester));
      return read instanceof Promise ? read.then((settled) => pageOf(settled, query)) : pageOf(read, query);
    },

    issue: <R>(slug: string, request?: R, requester?: Requester<R>) => counted(issue(slug, request, requester)),

    async refreshFromUpstream(waitUntil?: WaitUntil): Promise<{ issues: number }> {
      const loading = { waitUntil, client: undefined };
      const archive = await cache.read(ARCHIVE_KEY, publishing(loadArchiveFromUpstream), loading, LOADING, true);
      const categories = await cache.read(CATEGORIES_KEY, publishing(loadCategoriesFromUpstream), loading, LOADING, true);
      if (archive.state === 'STALE' || categories.state === 'STALE') throw new Error('the upstream refresh failed; the copies are kept');
      return { issues: indexReadOf(archive).index.all.length };
    },

    // The copy kept, else (with `load`) the shared tier's fresh one, else (with `upstream`) one read now.
    async freshArchiveIndex({ load = true, upstream: mayReadUpstream = true } = {}): Promise<IndexCopy | undefined> {
      const kept = freshIndex(cache.peek(ARCHIVE_KEY));
      if (kept || !load) return kept;
      let loadFresh = publishing(loadArchiveFromUpstream);
      if (sharedCache) {
        const entry = await sharedCache.get(ARCHIVE_KEY).catch(() => undefined);
        if (entry !== undefined && archiveFresh(entry.fetchedAt)) loadFresh = loadArchive;
        else if (!mayReadUpstream) return undefined;
      }
      return freshIndex((await cache.read(ARCHIVE_KEY, loadFresh, undefined, undefined, true)).value);
    },

    categories: <R>(request?: R, requester?: Requester<R>): MaybePromise<PublicRead<CategoriesBody>> =>
      counted(andThen(cache.read(CATEGORIES_KEY, loadCategories, request, requester), categoriesReadOf)),

    stats() {
      const { size: renderedPages, calculatedSize: renderedPageBytes } = pages.stats();
      return { ...cache.stats(), notFoundEntries: notFound.size, notFoundBytes: notFound.calculatedSize, renderedPages, renderedPageBytes };
    },
  };
}
