import * as z from '../zod.js';
import type { Logger } from '../log.js';
import type { IssueSummary } from '../public-shapes.js';
import type { ArchiveIndex } from '../reads/cached-value.js';
import type { IndexCopy } from '../reads/slug-lookup.js';
import { changesBetween, mergeChanges, snapshotOf, type ArchiveChange, type ArchiveSnapshot, type ChangeKind } from './archive-changes.js';
import type { DeployHookResult } from './deploy-hook.js';

/**
 * Where the watch keeps what it last saw and what it has not yet announced, as one string: this
 * process's memory by default; Redis for several Node instances, a KV namespace on Workers, so
 * that a restart, another instance or another isolate goes on from there.
 */
export interface WatchStore {
  load(): Promise<string | undefined>;
  save(state: string): Promise<void>;
}

/**
 * Who watches among instances that share the store (Redis): one at a time. `hold` takes the
 * lease when it is free and renews it when this instance holds it; false when another instance
 * holds it, or the lease cannot be had (then nobody watches until it can: no change is lost,
 * the store remembers what was announced).
 */
export interface WatchLease {
  hold(): Promise<boolean>;
}

export interface ArchiveWatchOptions {
  /**
   * The archive index no older than its TTL (public-reads' `freshArchiveIndex`); `undefined` when
   * none could be had. `watching`: this instance holds the lease, and may read the upstream for
   * it; the others only take the copy it shared.
   */
  readIndex: (watching: boolean) => Promise<IndexCopy | undefined>;
  /** Calls the build hook with what changed (deploy-hook.ts). */
  callHook: (changes: readonly ArchiveChange[]) => Promise<DeployHookResult>;
  /** The hook as log lines name it: its origin, never its token. */
  hookLabel: string;
  store?: WatchStore;
  /**
   * The store may be written between two ticks by another run of this watch (Workers: a Cron
   * Trigger in another isolate): read it again at every tick. Otherwise it is read once, and again
   * whenever the lease is taken over.
   */
  reloadEachTick?: boolean;
  lease?: WatchLease;
  /**
   * How long after a change is found the hook waits, so that every copy another instance may
   * serve has the change by then (Node with Redis: a TTL and a little); 0 where the copy this
   * instance serves is the one that changed.
   */
  settleMs?: number;
  now: () => number;
  log: Logger;
}

/** The first retry of a failed call waits this long; each next one twice as long, up to HOOK_RETRY_MAX_MS. */
export const HOOK_RETRY_FIRST_MS = 5_000;
export const HOOK_RETRY_MAX_MS = 10 * 60_000;
/**
 * After the index could not be had, the watching instance does not ask again for this long (the
 * read cache's own pause after a failed refresh): a failing upstream is not polled every tick.
 */
export const WATCH_READ_PAUSE_MS = 30_000;

/** What the store holds: the last snapshot seen, the changes not yet announced, and when to call next. */
interface WatchState {
  seen: ArchiveSnapshot;
  pending: ArchiveChange[];
  /** Failed calls in a row for `pending`. */
  attempts: number;
  /** Not called before this time (ms): a change settling, or a failed call backing off. */
  dueAt: number;
}

const KINDS = ['new', 'edited', 'unpublished'] as const satisfies readonly ChangeKind[];
const StoredStateSchema = z.object({
  seen: z.array(z.tuple([z.string(), z.string()])),
  pending: z.array(z.object({ slug: z.string(), kind: z.enum(KINDS) })),
  attempts: z.number(),
  dueAt: z.number(),
});

function encodeState(state: WatchState): string {
  return JSON.stringify({ seen: [...state.seen], pending: state.pending, attempts: state.attempts, dueAt: state.dueAt });
}

/** The stored state, or `undefined` for none, or one that does not parse (another version's): a first look again. */
function decodeState(text: string | undefined): WatchState | undefined {
  if (text === undefined) return undefined;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return undefined;
  }
  const parsed = StoredStateSchema.safeParse(json);
  return parsed.success ? { ...parsed.data, seen: new Map(parsed.data.seen) } : undefined;
}

/** The store of a single process: its memory (lost on restart, when the first look is again a first look). */
export function createMemoryWatchStore(): WatchStore {
  let stored: string | undefined;
  return {
    load: async () => stored,
    save: async (state) => {
      stored = state;
    },
  };
}

function countByKind(changes: readonly ArchiveChange[]): Record<ChangeKind, number> {
  const counts: Record<ChangeKind, number> = { new: 0, edited: 0, unpublished: 0 };
  for (const change of changes) counts[change.kind] += 1;
  return counts;
}

/**
 * Watches the archive without visitors and calls the build hook once per change
 * (docs/deployment.md "Build hooks"). Each `tick` (Node: a timer; Workers: the Cron Trigger)
 * takes the index no older than its TTL, which reading it keeps fresh, and compares it with what
 * was last seen: new, edited and unpublished issues become one pending call, which is made once
 * due and retried with backoff while it fails; changes found meanwhile join it. The first look
 * only remembers what it saw: a start is not a change. Never a call when nothing changed; the
 * change is in the cache this instance serves before the call goes out.
 */
export function createArchiveWatch(options: ArchiveWatchOptions) {
  const { readIndex, callHook, hookLabel, lease, now, log, settleMs = 0, reloadEachTick = false } = options;
  const store = options.store ?? createMemoryWatchStore();
  /** The state as this instance last loaded or saved it; trusted while it holds the lease. */
  let state: WatchState | undefined;
  let loaded = false;
  let holding = false;
  /** The index last compared: the same copy again (a 304, say) is not compared again. */
  let compared: ArchiveIndex | undefined;
  /** Each summary's fingerprint, while the summary is in a kept index (archive-changes.ts `snapshotOf`). */
  const prints = new WeakMap<IssueSummary, string>();
  let readPausedUntil = Number.NEGATIVE_INFINITY;
  let running: Promise<void> | undefined;

  async function save(next: WatchState): Promise<void> {
    state = next;
    await store.save(encodeState(next));
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
    // A call already waiting (settling or backing off) keeps its time; a first one settles from now.
    const dueAt = state.pending.length > 0 ? state.dueAt : now() + settleMs;
    await save({ seen: snapshot, pending, attempts: pending.length > 0 ? state.attempts : 0, dueAt });
    log.log('info', 'archive_changed', { ...countByKind(changes), pending: pending.length, hook: hookLabel });
  }

  async function call(current: WatchState): Promise<void> {
    const result = await callHook(current.pending);
    const counts = countByKind(current.pending);
    if (result.ok) {
      await save({ ...current, pending: [], attempts: 0, dueAt: 0 });
      log.log('info', 'deploy_hook_called', { ...counts, status: result.status, attempts: current.attempts + 1, hook: hookLabel });
      return;
    }
    const attempts = current.attempts + 1;
    const waitMs = Math.min(HOOK_RETRY_MAX_MS, HOOK_RETRY_FIRST_MS * 2 ** Math.min(attempts - 1, 20));
    await save({ ...current, attempts, dueAt: now() + waitMs });
    log.log('warn', 'deploy_hook_failed', {
      ...counts,
      ...(result.status === undefined ? { reason: result.reason } : { status: result.status }),
      attempts,
      retryInSeconds: Math.round(waitMs / 1000),
      hook: hookLabel,
    });
  }

  async function run(check: boolean): Promise<void> {
    const holds = lease === undefined ? true : await lease.hold().catch(() => false);
    // Another instance may have watched meanwhile: what it saved is what this one goes on from.
    if (!holds || (lease !== undefined && !holding) || reloadEachTick) loaded = false;
    holding = holds;
    const time = now();
    // Reading keeps this instance's copy fresh, also where another instance watches (then it
    // comes from the shared tier, and the hook waits `settleMs` for every instance to have it).
    let copy: IndexCopy | undefined;
    if (check && time >= readPausedUntil) {
      copy = await readIndex(holds).catch(() => undefined);
      if (copy === undefined && holds) readPausedUntil = time + WATCH_READ_PAUSE_MS;
    }
    if (!holds) return;
    if (!loaded) {
      state = decodeState(await store.load());
      loaded = true;
      compared = undefined;
    }
    if (copy !== undefined && copy.index !== compared) await look(copy);
    if (state !== undefined && state.pending.length > 0 && now() >= state.dueAt) await call(state);
  }

  return {
    /**
     * One look and, when due, one call. `check: false` only calls (a Cron Trigger whose refresh
     * failed still retries a failed call). Never rejects: a store or lease that fails is tried at
     * the next tick. One tick at a time per instance: a tick while one runs joins it.
     */
    tick({ check = true }: { check?: boolean } = {}): Promise<void> {
      running ??= run(check)
        .catch((error: unknown) => {
          // The store could not be read or written (Redis or KV unavailable): the next tick tries again.
          loaded = false;
          log.log('warn', 'archive_watch_failed', { reason: error instanceof Error ? error.name : 'unknown', hook: hookLabel });
        })
        .finally(() => {
          running = undefined;
        });
      return running;
    },
  };
}

export type ArchiveWatch = ReturnType<typeof createArchiveWatch>;
