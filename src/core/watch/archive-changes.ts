import type { IssueSummary } from '../public-shapes.js';
import type { ArchiveIndex } from '../reads/cached-value.js';

export const CHANGE_KINDS = ['new', 'edited', 'unpublished'] as const;
export type ChangeKind = (typeof CHANGE_KINDS)[number];

export interface ArchiveChange {
  slug: string;
  kind: ChangeKind;
}

/**
 * Per public slug, a fingerprint of its `updatedAt` and everything the archive shows of it, so an
 * edit shows even without `updatedAt`, and a renamed category too.
 */
export type ArchiveSnapshot = ReadonlyMap<string, string>;

/** `memo`: a head-window refresh reuses the summary objects, so only the rows it read are printed again. */
export function snapshotOf(index: ArchiveIndex, memo?: WeakMap<IssueSummary, string>): ArchiveSnapshot {
  const snapshot = new Map<string, string>();
  for (const summary of index.all) {
    let print = memo?.get(summary);
    if (print === undefined) {
      const updatedAt = index.sources.get(summary.slug)?.updatedAt ?? '';
      print = fingerprint(`${updatedAt}\n${JSON.stringify(summary)}`);
      memo?.set(summary, print);
    }
    snapshot.set(summary.slug, print);
  }
  return snapshot;
}

export function changesBetween(before: ArchiveSnapshot, after: ArchiveSnapshot): ArchiveChange[] {
  const changes: ArchiveChange[] = [];
  for (const [slug, print] of after) {
    const earlier = before.get(slug);
    if (earlier === undefined) changes.push({ slug, kind: 'new' });
    else if (earlier !== print) changes.push({ slug, kind: 'edited' });
  }
  for (const slug of before.keys()) if (!after.has(slug)) changes.push({ slug, kind: 'unpublished' });
  return changes;
}

/**
 * Changes not yet announced, with `later` ones added: one per slug, against what was last announced
 * (new then edited is new; new then unpublished is dropped; unpublished then new is an edit).
 */
export function mergeChanges(pending: readonly ArchiveChange[], later: readonly ArchiveChange[]): ArchiveChange[] {
  const bySlug = new Map(pending.map((change) => [change.slug, change.kind]));
  for (const { slug, kind } of later) {
    const earlier = bySlug.get(slug);
    if (earlier === 'new' && kind === 'unpublished') bySlug.delete(slug);
    else if (earlier === 'new' && kind === 'edited') continue;
    else if (earlier === 'unpublished' && kind === 'new') bySlug.set(slug, 'edited');
    else bySlug.set(slug, kind);
  }
  return [...bySlug].map(([slug, kind]) => ({ slug, kind }));
}

export function countByKind(changes: readonly ArchiveChange[]): Record<ChangeKind, number> {
  const counts: Record<ChangeKind, number> = { new: 0, edited: 0, unpublished: 0 };
  for (const change of changes) counts[change.kind] += 1;
  return counts;
}

/** 64-bit FNV-1a over UTF-16 code units: tells two versions of a row apart and keeps a stored snapshot small. */
function fingerprint(text: string): string {
  let high = 0xcbf29ce4;
  let low = 0x84222325;
  for (let index = 0; index < text.length; index += 1) {
    low = (low ^ text.charCodeAt(index)) >>> 0;
    // × the 64-bit FNV prime 0x100000001b3, on two 32-bit halves.
    const lowProduct = low * 0x1b3;
    const carry = Math.floor(lowProduct / 0x1_0000_0000);
    high = (Math.imul(high, 0x1b3) + Math.imul(low, 0x100) + carry) >>> 0;
    low = lowProduct >>> 0;
  }
  return high.toString(16).padStart(8, '0') + low.toString(16).padStart(8, '0');
}
