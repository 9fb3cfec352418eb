import * as z from '../zod.js';
import type { IssueSummary, PublicCategory } from '../shape.js';
import { stringBytes } from './memory-budget.js';
import { renderedBytes, type RenderedJson } from './rendered-json.js';
import type { SharedEntry } from './shared-tier.js';

/** The archive as one cached index; every limit/offset/category is served from it. */
export interface ArchiveIndex {
  all: IssueSummary[];
  byCategory: Map<string, IssueSummary[]>;
  /** Every public slug: an unknown one is a 404 without asking the upstream, when `complete`. */
  slugs: ReadonlySet<string>;
  /** The upstream listed fewer issues than ARCHIVE_MAX_ISSUES: nothing public is missing from it. */
  complete: boolean;
  size: number;
}

/** What the read cache holds per key; `fetchedAt` is when the upstream answered (ms). */
export type CachedValue =
  | { kind: 'archive'; index: ArchiveIndex; fetchedAt: number }
  | { kind: 'json'; rendered: RenderedJson; size: number; fetchedAt: number };

/** `complete: false` (the default) for an index cut off at ARCHIVE_MAX_ISSUES, or of unknown completeness. */
export function archiveValue(all: IssueSummary[], fetchedAt: number, complete = false): CachedValue {
  return { kind: 'archive', index: buildArchiveIndex(all, complete), fetchedAt };
}

export function jsonValue(rendered: RenderedJson, fetchedAt: number): CachedValue {
  return { kind: 'json', rendered, size: renderedBytes(rendered), fetchedAt };
}

/** Approximate bytes a value holds in memory (its share of the upstream-data budget). */
export function sizeOfCachedValue(value: CachedValue): number {
  return value.kind === 'archive' ? value.index.size : value.size;
}

function buildArchiveIndex(all: IssueSummary[], complete: boolean): ArchiveIndex {
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
  return { all, byCategory, slugs, complete, size };
}

// Typed against the shapes they rebuild: a field added to IssueSummary fails to compile here.
const PublicCategorySchema: z.ZodMiniType<PublicCategory> = z.object({ name: z.string(), slug: z.string() });
const IssueSummarySchema: z.ZodMiniType<IssueSummary> = z.object({
  slug: z.string(),
  subject: z.string(),
  previewText: z.nullable(z.string()),
  thumbnailUrl: z.nullable(z.string()),
  sentAt: z.nullable(z.string()),
  category: z.nullable(PublicCategorySchema),
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
  z.object({ kind: z.literal('archive'), all: z.array(IssueSummarySchema), complete: z.optional(z.boolean()) }),
  z.object({ kind: z.literal('json'), body: z.string(), etag: z.string() }),
]);

export function encodeSharedEntry(value: CachedValue): SharedEntry {
  const payload =
    value.kind === 'archive'
      ? JSON.stringify({ kind: 'archive', all: value.index.all, complete: value.index.complete })
      : JSON.stringify({ kind: 'json', body: value.rendered.body, etag: value.rendered.etag });
  return { payload, fetchedAt: value.fetchedAt };
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
  return payload.kind === 'archive'
    ? archiveValue(payload.all, entry.fetchedAt, payload.complete ?? false)
    : jsonValue({ body: payload.body, etag: payload.etag }, entry.fetchedAt);
}
