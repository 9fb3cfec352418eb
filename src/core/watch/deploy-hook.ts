import type { ArchiveChange, ChangeKind } from './archive-changes.js';

/** A call the receiver has not answered in this long failed: it is tried again later. */
const DEFAULT_HOOK_TIMEOUT_MS = 10_000;
/** Slugs named in one call at most: the body stays small whatever changed (a whole category renamed, say). */
export const MAX_NAMED_CHANGES = 100;

/** The JSON body of a build hook call: what changed, never the key or the hook's own address. */
export interface DeployHookBody {
  event: 'archive_changed';
  /** Issues per kind of change. */
  counts: Record<ChangeKind, number>;
  /** The changes, at most MAX_NAMED_CHANGES of them. */
  changes: ArchiveChange[];
  /** Changes left out of `changes` (0 when it names them all). */
  more: number;
}

/** How a call went: the receiver took it (2xx), or why not. */
export type DeployHookResult = { ok: true; status: number } | { ok: false; status?: number; reason: 'status' | 'timeout' | 'unreachable' };

export interface DeployHookOptions {
  /** DEPLOY_HOOK_URL: a Netlify, Vercel or Cloudflare Pages build hook, or any URL that takes a POST. */
  url: string;
  fetch?: typeof globalThis.fetch;
  timeoutMs?: number;
}

/** The body naming `changes`. */
export function deployHookBody(changes: readonly ArchiveChange[]): DeployHookBody {
  const counts: Record<ChangeKind, number> = { new: 0, edited: 0, unpublished: 0 };
  for (const change of changes) counts[change.kind] += 1;
  return { event: 'archive_changed', counts, changes: changes.slice(0, MAX_NAMED_CHANGES), more: Math.max(0, changes.length - MAX_NAMED_CHANGES) };
}

/**
 * The hook's address as a log line may show it: its origin only. A build hook's path (or query)
 * is its token, and anyone holding it can start builds (docs/security.md "What the service guarantees").
 */
export function describeHookUrl(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return 'the deploy hook';
  }
}

/**
 * Calls the build hook once with `changes`: a JSON POST, no redirect followed (it could carry
 * the call to a host nobody configured), a timeout. Never throws: a failure is a result, and the
 * watch (archive-watch.ts) tries again with backoff.
 */
export function createDeployHook(options: DeployHookOptions): (changes: readonly ArchiveChange[]) => Promise<DeployHookResult> {
  const { url, fetch = globalThis.fetch, timeoutMs = DEFAULT_HOOK_TIMEOUT_MS } = options;
  return async function callDeployHook(changes) {
    try {
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(deployHookBody(changes)),
        redirect: 'manual',
        signal: AbortSignal.timeout(timeoutMs),
      });
      await response.body?.cancel();
      return response.ok ? { ok: true, status: response.status } : { ok: false, status: response.status, reason: 'status' };
    } catch (error) {
      return { ok: false, reason: error instanceof Error && error.name === 'TimeoutError' ? 'timeout' : 'unreachable' };
    }
  };
}
