import { UpstreamError } from '../../core/upstream/transport.js';

/** `ok`, the UpstreamError kind, `held_off` (refused without going out: no status), or `error`. */
export function upstreamOutcome(error: unknown): string {
  if (error === undefined) return 'ok';
  if (!(error instanceof UpstreamError)) return 'error';
  if (error.kind === 'rate_limited' && error.status === undefined) return 'held_off';
  return error.kind;
}

/** The upstream is there, even when it says no. */
const ANSWERED: ReadonlySet<string> = new Set(['ok', 'not_found', 'validation', 'refused']);
/** It is not. A 429 or a hold-off counts neither way: the cache serves meanwhile. */
const FAILED: ReadonlySet<string> = new Set(['unavailable', 'timeout', 'bad_response', 'auth', 'error']);

/** `/readyz`: ready once the upstream has answered (or the cache is warm), not while shedding or failing for `unreadyAfterMs`. */
export function createReadiness({ unreadyAfterMs, now = Date.now }: { unreadyAfterMs: number; now?: (() => number) | undefined }) {
  let answered = false;
  let failingSince: number | undefined;
  let draining = false;
  return {
    observe(outcome: string): void {
      if (ANSWERED.has(outcome)) {
        answered = true;
        failingSince = undefined;
      } else if (FAILED.has(outcome)) {
        failingSince ??= now();
      }
    },
    state(cacheWarm: boolean, shedding = false): { ready: true } | { ready: false; reason: string } {
      if (draining) return { ready: false, reason: 'shutting down' };
      if (shedding) return { ready: false, reason: 'the public listener is shedding connections (MAX_CONNECTIONS)' };
      if (!answered && !cacheWarm) return { ready: false, reason: 'the upstream has not answered yet' };
      if (failingSince !== undefined && now() - failingSince >= unreadyAfterMs) {
        return { ready: false, reason: `every upstream call has failed for ${Math.floor((now() - failingSince) / 1000)} s` };
      }
      return { ready: true };
    },
    drain(): void {
      draining = true;
    },
  };
}
