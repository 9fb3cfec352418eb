import { countByKind, type ArchiveChange } from './archive-changes.js';

const DEFAULT_HOOK_TIMEOUT_MS = 10_000;
/** The body stays small whatever changed (a whole category renamed, say). */
export const MAX_NAMED_CHANGES = 100;

export type DeployHookResult = { ok: true; status: number } | { ok: false; status?: number; reason: 'status' | 'timeout' | 'unreachable' };

/** What changed (`more`: changes left out), never the key or the hook's own address. */
export function deployHookBody(changes: readonly ArchiveChange[]) {
  return {
    event: 'archive_changed' as const,
    counts: countByKind(changes),
    changes: changes.slice(0, MAX_NAMED_CHANGES),
    more: Math.max(0, changes.length - MAX_NAMED_CHANGES),
  };
}

/** Its origin only: a build hook's path is its token (docs/security.md "What the service guarantees"). */
export function describeHookUrl(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return 'the deploy hook';
  }
}

/** One JSON POST, no redirect followed. Never throws: the watch retries a failure with backoff. */
export function createDeployHook(options: {
  /** DEPLOY_HOOK_URL: any URL that takes a POST. */
  url: string;
  fetch?: typeof globalThis.fetch;
  timeoutMs?: number;
}): (changes: readonly ArchiveChange[]) => Promise<DeployHookResult> {
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
