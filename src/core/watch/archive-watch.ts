import * as z from '../zod.js';
import type { Logger } from '../log.js';
import type { IssueSummary } from '../public-shapes.js';
import type { ArchiveIndex, IndexCopy } from '../reads/cached-value.js';

type ArchiveChange = WatchState['pending'][number];

type DeployHookResult = { ok: true; status: number } | { ok: false; status?: number; reason: 'status' | 'timeout' | 'unreachable' };

export const MAX_NAMED_CHANGES = 100;

function countByKind(changes: readonly ArchiveChange[]): Record<ArchiveChange['kind'], number> {
  const counts = { new: 0, edited: 0, unpublished: 0 };
  for (const change of changes) counts[change.kind] += 1;
  return counts;
}

/** Its origin only: a build hook's path is its token (docs/security.md "What the service guarantees"). */
export const describeHookUrl = (url: string): string => URL.parse(url)?.origin ?? 'the deploy hook';

/** No redirect followed. Never throws: the watch retries a failure with backoff. */
export function createDeployHook({ url, fetch = globalThis.fetch }: { url: string; fetch?: typeof globalThis.fetch }) {
  return async function callDeployHook(changes: readonly ArchiveChange[]): Promise<DeployHookResult> {
    try {
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({
          event: 'archive_changed',
          counts: countByKind(changes),
          changes: changes.slice(0, MAX_NAMED_CHANGES),
          more: Math.max(0, changes.length - MAX_NAMED_CHANGES),
        }),
        redirect: 'manual',
        signal: AbortSignal.timeout(10_000),
      });
      await response.body?.cancel();
      return response.ok ? { ok: true, status: response.status } : { ok: false, status: response.status, reason: 'status' };
    } catch (error) {
      return { ok: false, reason: error instanceof Error && error.name === 'TimeoutError' ? 'timeout' : 'unreachable' };
    }
  };
}

// `hookLabel`: the hook's origin, never its token; `reloadEachTick`: another isolate's Cron Trigger may write the store between
// ticks; `settleMs`: the wait before calling, so that every instance's copy has the change.
export interface ArchiveWatchOptions {
  readIndex: (watching: boolean) => Promise<IndexCopy | undefined>;
  callHook: (changes: readonly ArchiveChange[]) => Promise<DeployHookResult>;
  hookLabel: string;
  store?: { load(): Promise<string | undefined>; save(state: string): Promise<void> };
  reloadEachTick?: boolean;
  lease?: { hold(): Promise<boolean> };
  settleMs?: number;
  now: () => number;
  log: Logger;
}

type ArchiveSnapshot = ReadonlyMap<string, string>;

/** `memo`: a head-window refresh reuses the summary objects: only the rows it read are printed again. */
export function snapshotOf(index: ArchiveIndex, memo?: WeakMap<IssueSummary, string>): ArchiveSnapshot {
  const snapshot = new Map<string, string>();
  for (const summary of index.all) {
    let print = memo?.get(summary);
    if (print === undefined) {
      print = fingerprint(`${index.sources.get(summary.slug)?.updatedAt ?? ''}\n${JSON.stringify(summary)}`);
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

/** One change per slug against what was last announced: new then edited is new, new then unpublished none, unpublished then new an edit. */
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

/** 64-bit FNV-1a over UTF-16 code units: keeps a stored snapshot small. */
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

const HOOK_RETRY_FIRST_MS = 5_000;
const HOOK_RETRY_MAX_MS = 10 * 60_000;
const WATCH_READ_PAUSE_MS = 30_000;

const StoredStateSchema = z.object({
  seen: z.array(z.tuple([z.string(), z.string()])),
  pending: z.array(z.object({ slug: z.string(), kind: z.enum(['new', 'edited', 'unpublished']) })),
  attempts: z.number(),
  dueAt: z.number(),
});
type WatchState = Omit<z.infer<typeof StoredStateSchema>, 'seen'> & { seen: ArchiveSnapshot };

function decodeState(text: string | undefined): WatchState | undefined {
  try {
    const parsed = StoredStateSchema.safeParse(JSON.parse(text ?? 'null'));
    return parsed.success ? { ...parsed.data, seen: new Map(parsed.data.seen) } : undefined;
  } catch {
    return undefined;
  }
}

/** Changes become one pending call of the build hook, retried with backoff (docs/deployment.md "Build hooks"). */
export function createArchiveWatch(options: ArchiveWatchOptions) {
  const { readIndex, callHook, hookLabel, store, lease, now, log, settleMs = 0, reloadEachTick = false } = options;
  // Trusted while this instance holds the lease; without a store, the only copy.
  let state: WatchState | undefined;
  let loaded = false;
  let compared: ArchiveIndex | undefined;
  const prints = new WeakMap<IssueSummary, string>();
  let readPausedUntil = Number.NEGATIVE_INFINITY;
  let running: Promise<void> | undefined;

  async function save(next: WatchState): Promise<void> {
    state = next;
    await store?.save(JSON.stringify({ ...next, seen: [...next.seen] }));
  }

  async function look(copy: IndexCopy): Promise<void> {
    compared = copy.index;
    const snapshot = snapshotOf(copy.index, prints);
    if (state === undefined) {
      await save({ seen: snapshot, pending: [], attempts: 0, dueAt: 0 });
      log.log('info', 'archive_watch_started', { issues: snapshot.size, hook: hookLabel });
      return;
    }
    const changes = changesBetween(state.seen, snapshot);
    if (changes.length === 0) return;
    const pending = mergeChanges(state.pending, changes);
    const dueAt = state.pending.length > 0 ? state.dueAt : now() + settleMs;
    await save({ seen: snapshot, pending, attempts: pending.length > 0 ? state.attempts : 0, dueAt });
    log.log('info', 'archive_changed', { ...countByKind(changes), pending: pending.length, hook: hookLabel });
  }

  async function call(current: WatchState): Promise<void> {
    const result = await callHook(current.pending);
    const counts = countByKind(current.pending);
    const attempts = current.attempts + 1;
    if (result.ok) {
      await save({ ...current, pending: [], attempts: 0, dueAt: 0 });
      log.log('info', 'deploy_hook_called', { ...counts, status: result.status, attempts, hook: hookLabel });
      return;
    }
    const waitMs = Math.min(HOOK_RETRY_MAX_MS, HOOK_RETRY_FIRST_MS * 2 ** Math.min(attempts - 1, 20));
    await save({ ...current, attempts, dueAt: now() + waitMs });
    const why = result.status === undefined ? { reason: result.reason } : { status: result.status };
    log.log('warn', 'deploy_hook_failed', { ...counts, ...why, attempts, retryInSeconds: Math.round(waitMs / 1000), hook: hookLabel });
  }

  async function run(check: boolean): Promise<void> {
    const holds = lease === undefined ? true : await lease.hold().catch(() => false);
    // Another instance may have watched meanwhile: what it saved is what this one goes on from.
    if (!holds || reloadEachTick) loaded = false;
    const time = now();
    let copy: IndexCopy | undefined;
    if (check && time >= readPausedUntil) {
      copy = await readIndex(holds).catch(() => undefined);
      if (copy === undefined && holds) readPausedUntil = time + WATCH_READ_PAUSE_MS;
    }
    if (!holds) return;
    if (!loaded) {
      if (store) state = decodeState(await store.load());
      loaded = true;
      compared = undefined;
    }
    if (copy !== undefined && copy.index !== compared) await look(copy);
    if (state !== undefined && state.pending.length > 0 && now() >= state.dueAt) await call(state);
  }

  return {
    /** One look and, when due, one call (`check: false`: the call only). Never rejects. */
    tick({ check = true }: { check?: boolean } = {}): Promise<void> {
      running ??= run(check)
        .catch((error: unknown) => {
          loaded = false;
          log.log('warn', 'archive_watch_failed', { reason: error instanceof Error ? error.name : 'unknown', hook: hookLabel });
        })
        .finally(() => (running = undefined));
      return running;
    },
  };
}
