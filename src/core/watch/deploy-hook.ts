export const CHANGE_KINDS = ['new', 'edited', 'unpublished'] as const;

export type ArchiveChange = { slug: string; kind: (typeof CHANGE_KINDS)[number] };

export type DeployHookResult = { ok: true; status: number } | { ok: false; status?: number; reason: 'status' | 'timeout' | 'unreachable' };

export const MAX_NAMED_CHANGES = 100;

export function countByKind(changes: readonly ArchiveChange[]): Record<ArchiveChange['kind'], number> {
  const counts = { new: 0, edited: 0, unpublished: 0 };
  for (const change of changes) counts[change.kind] += 1;
  return counts;
}

export function deployHookBody(changes: readonly ArchiveChange[]) {
  return {
    event: 'archive_changed' as const,
    counts: countByKind(changes),
    changes: changes.slice(0, MAX_NAMED_CHANGES),
    more: Math.max(0, changes.length - MAX_NAMED_CHANGES),
  };
}

/** Its origin only: a build hook's path is its token (docs/security.md "What the service guarantees"). */
export const describeHookUrl = (url: string): string => URL.parse(url)?.origin ?? 'the deploy hook';

/** No redirect followed. Never throws: the watch retries a failure with backoff. */
export function createDeployHook(options: { url: string; fetch?: typeof globalThis.fetch }) {
  const { url, fetch = globalThis.fetch } = options;
  return async function callDeployHook(changes: readonly ArchiveChange[]): Promise<DeployHookResult> {
    try {
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(deployHookBody(changes)),
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
