import * as z from '../zod.js';
import type { IssueSummary, PublicCategory } from '../public-shapes.js';
import { stringBytes } from './memory-budget.js';
import { renderedBytes, type RenderedJson } from './rendered-json.js';
import type { ListOrder } from '../upstream/archive.js';
import type { Validators } from '../upstream/transport.js';
import type { SharedEntry } from './shared-tier.js';
import { decodeTextIndex, encodeTextIndex, textIndexBytes, type TextIndex } from './text-index.js';

/** The archive as one cached index; every limit/offset/category is served from it. */
export interface ArchiveIndex {
  all: IssueSummary[];
  byCategory: Map<string, IssueSummary[]>;
  /** Every public slug: an unknown one is a 404 without asking the upstream, when `complete`. */
  slugs: ReadonlySet<string>;
  /** The upstream listed fewer issues than ARCHIVE_MAX_ISSUES: nothing public is missing from it. */
  complete: boolean;
  size: number;
  /** Per public slug, the upstream row it came from: a copy read by slug stays valid while `updatedAt` is the same. */
  sources: ReadonlyMap<string, IssueSource>;
  /** How the index was read, for the next refresh (docs/upstream.md "How the archive is read"). */
  sync: ArchiveSync;
  /** The words search reads (text-index.ts); made from the summaries when a search first needs it if absent. */
  text?: TextIndex | undefined;
}

/** The upstream row behind a summary. */
export interface IssueSource {
  id: string;
  updatedAt: string | null;
}

/** What a refresh needs of the reads that made an index. */
export interface ArchiveSync {
  /**
   * The order the last whole read found the upstream listing in, newest first by sending or by
   * creation: refreshes read only its head. `undefined` for neither: every refresh reads it all.
   */
  order: ListOrder | undefined;
  /** When the archive was last read whole (ms): a whole read is due again ARCHIVE_RESYNC_SECONDS later. */
  fullReadAt: number;
  /** Ids of every row the upstream listed, in the order listed: where a head read is placed (`placeHead`). */
  listing: readonly string[];
  /** Validators of the head page, for a conditional refresh. */
  head?: Validators | undefined;
}

/** What the read cache holds per key; `fetchedAt` is when the upstream answered (ms). */
export type CachedValue =
  | { kind: 'archive'; index: ArchiveIndex; fetchedAt: number }
  /** `version`: the `updatedAt` of the upstream row it was made from, when known. */
  | {
      kind: 'json';
      rendered: RenderedJson;
      size: number;
      fetchedAt: number;
      version?: string | undefined;
      /** An issue page's neighbours as rendered in it (see public-reads.ts `neighboursKey`). */
      neighbours?: string | undefined;
    };

/** An index that knows no rows behind it: nothing to refresh from (a test's or an old shared copy). */
const NO_SYNC: ArchiveSync = { order: undefined, fullReadAt: Number.NEGATIVE_INFINITY, listing: [] };

/** `complete: false` (the default) for an index cut off at ARCHIVE_MAX_ISSUES, or of unknown completeness. */
export function archiveValue(
  all: IssueSummary[],
  fetchedAt: number,
  complete = false,
  rows: { sources?: ReadonlyMap<string, IssueSource>; sync?: ArchiveSync; text?: TextIndex | undefined } = {},
): CachedValue {
  return {
    kind: 'archive',
    index: buildArchiveIndex(all, complete, rows.sources ?? new Map(), rows.sync ?? NO_SYNC, rows.text),
    fetchedAt,
  };
}

export function jsonValue(rendered: RenderedJson, fetchedAt: number, version?: string, neighbours?: string): CachedValue {
  return {
    kind: 'json',
    rendered,
    size: renderedBytes(rendered),
    fetchedAt,
    ...(version === undefined ? {} : { version }),
    ...(neighbours === undefined ? {} : { neighbours }),
  };
}

/** Approximate bytes a value holds in memory (its share of the upstream-data budget). */
export function sizeOfCachedValue(value: CachedValue): number {
  return value.kind === 'archive' ? value.index.size : value.size;
}

function buildArchiveIndex(
  all: IssueSummary[],
  complete: boolean,
  sources: ReadonlyMap<string, IssueSource>,
  sync: ArchiveSync,
  text: TextIndex | undefined,
): ArchiveIndex {
  const byCategory = new Map<string, IssueSummary[]>();
  const slugs = new Set<string>();
  let size = 256;
  for (const summary of all) {
    // The slug once more, for the set (its string is shared, but the set's slot is not).
    size += stringBytes(JSON.stringify(summary)) + 16;
    slugs.add(summary.slug);
    if (!summary.category) continue;
    const list = byCategory.get(summary.category.slug) ?? [];
    list.push(summary);
    byCategory.set(summary.category.slug, list);
  }
  // An id and a date per row, and an id per listed row (public or not).
  size += sources.size * 120 + sync.listing.length * 64;
  if (text !== undefined) size += textIndexBytes(text);
  return { all, byCategory, slugs, complete, size, sources, sync, ...(text === undefined ? {} : { text }) };
}

/*
 * Stored summaries, checked on the way back from the shared tier. A lighter copy of the public
 * shapes' schemas (core/public-shapes.ts), which the Worker never loads; typed against the shapes,
 * so a field added there fails to compile here until it is added.
 */
const StoredCategorySchema: z.ZodMiniType<PublicCategory> = z.object({ name: z.string(), slug: z.string() });
const StoredSummarySchema: z.ZodMiniType<IssueSummary> = z.object({
  slug: z.string(),
  subject: z.string(),
  previewText: z.nullable(z.string()),
  thumbnailUrl: z.nullable(z.string()),
  sentAt: z.nullable(z.string()),
  updatedAt: z.nullable(z.string()),
  category: z.nullable(StoredCategorySchema),
  readingMinutes: z.nullable(z.number()),
});

/**
 * A shared entry's payload: our own, already public shapes, the archive's summaries or a
 * rendered body. Checked when read all the same: the tier is storage outside this isolate, and
 * a copy that does not match (truncated, or written by another version) is a miss, not a crash.
 */
// z.union rather than z.discriminatedUnion: `kind` is a literal in each branch, so the check is
// the same for two branches, and the Worker bundle is 3 KiB smaller.
const SharedPayloadSchema = z.union([
  // `complete` is optional: an entry stored before it existed reads as incomplete (per-slug reads).
  z.object({
    kind: z.literal('archive'),
    all: z.array(StoredSummarySchema),
    complete: z.optional(z.boolean()),
    // Optional, as `complete`: an older entry reads as one with nothing to refresh from (a whole read next).
    sources: z.optional(z.array(z.tuple([z.string(), z.string(), z.nullable(z.string())]))),
    // An entry written before `order` existed reads as one of no known order: a whole read next.
    sync: z.optional(
      z.object({
        order: z.optional(z.enum(['sent', 'created'])),
        fullReadAt: z.number(),
        ids: z.array(z.string()),
        head: z.optional(z.object({ etag: z.optional(z.string()), lastModified: z.optional(z.string()) })),
      }),
    ),
    // The text index (see encodeTextIndex); without it, an index searches its summaries only.
    text: z.optional(
      z.object({
        words: z.string(),
        offsets: z.string(),
        postings: z.string(),
        docs: z.array(z.tuple([z.string(), z.nullable(z.string()), z.string(), z.nullable(z.number())])),
      }),
    ),
  }),
  z.object({
    kind: z.literal('json'),
    body: z.string(),
    etag: z.string(),
    version: z.optional(z.string()),
    neighbours: z.optional(z.string()),
  }),
]);

export function encodeSharedEntry(value: CachedValue): SharedEntry {
  const payload =
    value.kind === 'archive'
      ? JSON.stringify({
          kind: 'archive',
          all: value.index.all,
          complete: value.index.complete,
          sources: [...value.index.sources].map(([slug, source]) => [slug, source.id, source.updatedAt]),
          sync: Number.isFinite(value.index.sync.fullReadAt) ? encodeSync(value.index.sync) : undefined,
          text: value.index.text && encodeTextIndex(value.index.text),
        })
      : JSON.stringify({
          kind: 'json',
          body: value.rendered.body,
          etag: value.rendered.etag,
          version: value.version,
          neighbours: value.neighbours,
        });
  return { payload, fetchedAt: value.fetchedAt };
}

function encodeSync(sync: ArchiveSync) {
  return { order: sync.order, fullReadAt: sync.fullReadAt, ids: sync.listing, head: sync.head };
}

/** The value a shared entry holds, or `undefined` (a miss) for one that does not parse. */
export function decodeSharedEntry(entry: SharedEntry): CachedValue | undefined {
  let json: unknown;
  try {
    json = JSON.parse(entry.payload);
  } catch {
    return undefined;
  }
  const parsed = SharedPayloadSchema.safeParse(json);
  if (!parsed.success) return undefined;
  const payload = parsed.data;
  if (payload.kind === 'json')
    return jsonValue({ body: payload.body, etag: payload.etag }, entry.fetchedAt, payload.version, payload.neighbours);
  const sources = new Map((payload.sources ?? []).map(([slug, id, updatedAt]) => [slug, { id, updatedAt }]));
  const sync = payload.sync && {
    order: payload.sync.order,
    fullReadAt: payload.sync.fullReadAt,
    listing: payload.sync.ids,
    head: payload.sync.head,
  };
  const text = payload.text && decodeTextIndex(payload.text);
  if (payload.text && !text) return undefined;
  return archiveValue(payload.all, entry.fetchedAt, payload.complete ?? false, { sources, ...(sync && { sync }), ...(text && { text }) });
}
