import * as z from '../zod.js';
import type { IssueSummary, PublicCategory } from '../public-shapes.js';
import { stringBytes } from './cache-policies.js';
import { renderedBytes, renderedWithEtag, type RenderedJson } from './rendered-json.js';
import type { ListOrder } from '../upstream/archive.js';
import type { Validators } from '../upstream/transport.js';
import type { SharedEntry } from './shared-tier.js';
import * as textIndex from './text-index.js';

export interface ArchiveIndex {
  all: IssueSummary[];
  byCategory: Map<string, IssueSummary[]>;
  /** Each slug's place in `all`, newest first. */
  positions: ReadonlyMap<string, number>;
  complete: boolean;
  size: number;
  sources: ReadonlyMap<string, IssueSource>;
  sync: ArchiveSync;
  text: textIndex.TextIndex;
}

export type IndexCopy = { index: ArchiveIndex; fetchedAt: number };

export type IssueSource = { id: string; updatedAt: string | null };

export type ArchiveSync = { order?: ListOrder | undefined; fullReadAt: number; ids: readonly string[]; head?: Validators | undefined };

/** `fetchedAt`: when the upstream answered (ms); `version`: the row's `updatedAt`. */
export type CachedValue =
  | { kind: 'archive'; index: ArchiveIndex; fetchedAt: number }
  | { kind: 'json'; rendered: RenderedJson; size: number; fetchedAt: number; version?: string; neighbours?: string };

// An index with nothing to refresh from (a test's or an old shared copy), whose text index is made from the summaries.
const NO_SYNC: ArchiveSync = { order: undefined, fullReadAt: Number.NEGATIVE_INFINITY, ids: [] };

export function archiveValue(
  all: IssueSummary[],
  fetchedAt: number,
  complete = false,
  rows: { sources?: ReadonlyMap<string, IssueSource>; sync?: ArchiveSync | undefined; text?: textIndex.TextIndex | undefined } = {},
): CachedValue {
  const { sources = new Map(), sync = NO_SYNC } = rows;
  const text = rows.text ?? textIndex.summaryTextIndex(all, (slug) => sources.get(slug)?.updatedAt ?? null);
  const byCategory = new Map<string, IssueSummary[]>();
  const positions = new Map<string, number>();
  let size = 256 + sources.size * 120 + sync.ids.length * 64 + textIndex.textIndexBytes(text);
  for (const [at, summary] of all.entries()) {
    size += stringBytes(JSON.stringify(summary)) + 16;
    positions.set(summary.slug, at);
    if (!summary.category) continue;
    const list = byCategory.get(summary.category.slug) ?? [];
    list.push(summary);
    byCategory.set(summary.category.slug, list);
  }
  return { kind: 'archive', index: { all, byCategory, positions, complete, size, sources, sync, text }, fetchedAt };
}

export function jsonValue(rendered: RenderedJson, fetchedAt: number, version?: string, neighbours?: string): CachedValue {
  // One literal: properties added later would live in a separate store.
  return {
    kind: 'json',
    rendered,
    size: renderedBytes(rendered),
    fetchedAt,
    ...(version === undefined ? {} : { version }),
    ...(neighbours === undefined ? {} : { neighbours }),
  };
}

// A lighter copy of core/public-shapes.ts's schemas (which the Worker never loads), typed against them so a new field fails to compile.
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

// A shared entry that does not match is a miss, not a crash; an older one, without the optional fields, reads as incomplete.
const SharedPayloadSchema = z.union([
  z.object({
    kind: z.literal('archive'),
    all: z.array(StoredSummarySchema),
    complete: z.optional(z.boolean()),
    sources: z.optional(z.array(z.tuple([z.string(), z.string(), z.nullable(z.string())]))),
    sync: z.optional(
      z.object({
        order: z.optional(z.enum(['sent', 'created'])),
        fullReadAt: z.number(),
        ids: z.array(z.string()),
        head: z.optional(z.object({ etag: z.optional(z.string()), lastModified: z.optional(z.string()) })),
      }),
    ),
    text: z.optional(textIndex.EncodedTextIndexSchema),
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
  const { fetchedAt } = value;
  if (value.kind === 'json') {
    const { rendered, version, neighbours } = value;
    return { payload: JSON.stringify({ kind: 'json', body: rendered.body, etag: rendered.etag, version, neighbours }), fetchedAt };
  }
  const { all, complete, sources, sync, text } = value.index;
  const stored = Number.isFinite(sync.fullReadAt) ? sync : undefined;
  const rows = [...sources].map(([slug, source]) => [slug, source.id, source.updatedAt]);
  return {
    payload: JSON.stringify({ kind: 'archive', all, complete, sources: rows, sync: stored, text: textIndex.encodeTextIndex(text) }),
    fetchedAt,
  };
}

export function decodeSharedEntry(entry: SharedEntry): CachedValue | undefined {
  let payload: z.infer<typeof SharedPayloadSchema>;
  try {
    payload = SharedPayloadSchema.parse(JSON.parse(entry.payload));
  } catch {
    return undefined;
  }
  if (payload.kind === 'json')
    return jsonValue(renderedWithEtag(payload.body, payload.etag), entry.fetchedAt, payload.version, payload.neighbours);
  const sources = new Map((payload.sources ?? []).map(([slug, id, updatedAt]) => [slug, { id, updatedAt }]));
  const text = payload.text && textIndex.decodeTextIndex(payload.text);
  if (payload.text && !text) return undefined;
  return archiveValue(payload.all, entry.fetchedAt, payload.complete ?? false, { sources, sync: payload.sync, text });
}
