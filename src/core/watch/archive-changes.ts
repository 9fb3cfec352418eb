import type { IssueSummary } from '../public-shapes.js';
import type { ArchiveIndex } from '../reads/cached-value.js';

/** What happened to one issue between two looks at the archive. */
export type ChangeKind = 'new' | 'edited' | 'unpublished';

/** One issue that changed: its slug and how. */
export interface ArchiveChange {
  slug: string;
  kind: ChangeKind;
}

/**
 * What a look at the archive keeps to compare the next one with: per public slug, a short
 * fingerprint of its row (its `updatedAt` and everything the archive shows of it), so an edit
 * shows even from an upstream that gives no `updatedAt`, and a renamed category too.
 */
export type ArchiveSnapshot = ReadonlyMap<string, string>;

/**
 * The snapshot of an index: every public slug it lists, with its fingerprint. `memo` keeps each
 * summary's fingerprint: a refresh from the head window builds the next index from the same
 * summary objects, so only the rows it read are printed again (docs/performance.md "Archive at
 * scale" has what that saves a Cron Trigger run).
 */
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

/** The issues listed in `after` and not `before` (new), in both with another fingerprint (edited), in `before` only (unpublished). */
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
 * Changes not yet announced, with `later` ones added: one entry per slug, saying how it differs
 * from what was last announced. New then edited is still new; new then unpublished never
 * reached the site and is dropped; unpublished then new again is an edit.
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

/**
 * 64 bits of FNV-1a over the text's UTF-16 code units, as 16 hex digits: enough to tell two
 * versions of one row apart, short enough that a snapshot of thousands of rows stays small where
 * it is stored (Redis, a KV namespace). Not a defence against anyone: the rows are the upstream's.
 */
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
