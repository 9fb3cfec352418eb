import { UpstreamError } from '../../core/upstream/transport.js';

/**
 * The `outcome` label of one upstream call: `ok`, the UpstreamError kind, `held_off` for a call
 * refused without going out while a 429's Retry-After runs (the one `rate_limited` error without
 * a status), or `error` for anything else thrown.
 */
export function upstreamOutcome(error: unknown): string {
  if (error === undefined) return 'ok';
  if (!(error instanceof UpstreamError)) return 'error';
  if (error.kind === 'rate_limited' && error.status === undefined) return 'held_off';
  return error.kind;
}

/** Outcomes that show the upstream is there and answering, even when it says no. */
const ANSWERED: ReadonlySet<string> = new Set(['ok', 'not_found', 'validation', 'refused']);
/**
 * Outcomes that show it is not: down, too slow, answering garbage, or refusing our key. A 429
 * and a hold-off count neither way: the upstream is there, and the cache serves meanwhile.
 */
const FAILED: ReadonlySet<string> = new Set(['unavailable', 'timeout', 'bad_response', 'auth', 'error']);

export type ReadinessState = { ready: true } | { ready: false; reason: string };

export interface Readiness {
  /** Told of every upstream call's outcome (see `upstreamOutcome`). */
  observe(outcome: string): void;
  /**
   * Ready once the upstream has answered (or the cache holds something), unless it has been
   * failing too long or the public listener is shedding connections near MAX_CONNECTIONS: then
   * a load balancer should send new visitors elsewhere.
   */
  state(cacheWarm: boolean, shedding?: boolean): ReadinessState;
  /** From now on not ready: the process is shutting down. */
  drain(): void;
}

export interface ReadinessOptions {
  /** ADMIN_UNREADY_AFTER_SECONDS, in ms: how long every call must have failed before we say so. */
  unreadyAfterMs: number;
  now?: () => number;
}

/**
 * What `/readyz` answers. A load balancer should send traffic only once we can serve it: after
 * the upstream has answered once (or the cache is warm), and not while every upstream call has
 * been failing for `unreadyAfterMs` (one answer ends the failing spell). A short outage is
 * bridged by the cache's stale copies, so it does not take the instance out of rotation.
 */
export function createReadiness(options: ReadinessOptions): Readiness {
  const { unreadyAfterMs, now = Date.now } = options;
  let answered = false;
  let failingSince: number | undefined;
  let draining = false;
  return {
    observe(outcome) {
      if (ANSWERED.has(outcome)) {
        answered = true;
        failingSince = undefined;
      } else if (FAILED.has(outcome)) {
        failingSince ??= now();
      }
    },
    state(cacheWarm, shedding = false) {
      if (draining) return { ready: false, reason: 'shutting down' };
      if (shedding) return { ready: false, reason: 'the public listener is shedding connections (MAX_CONNECTIONS)' };
      if (!answered && !cacheWarm) return { ready: false, reason: 'the upstream has not answered yet' };
      if (failingSince !== undefined && now() - failingSince >= unreadyAfterMs) {
        const seconds = Math.floor((now() - failingSince) / 1000);
        return { ready: false, reason: `every upstream call has failed for ${seconds} s` };
      }
      return { ready: true };
    },
    drain() {
      draining = true;
    },
  };
}
