import type { Logger } from '../../core/log.js';

/**
 * One connection's worth of Redis as the service uses it: every command bounded by a short
 * timeout, and a known outage answered at once. Redis holds only what the service can also
 * keep in memory, so a caller that gets a rejection falls back to its in-memory behaviour;
 * no visitor request waits longer than one timeout for Redis, or fails because of it.
 */
export interface RedisLink {
  /** Sends one command; rejects after the timeout, or at once while Redis is known down. */
  send(args: readonly string[]): Promise<unknown>;
  /** False from the first failed command until Redis has answered everything for a while (an outage spell). */
  healthy(): boolean;
  /** A connection error reported by the client, before any command noticed. */
  markDown(reason: string): void;
  close(): void;
}

export interface RedisLinkOptions {
  /** The client's raw command call. */
  send: (args: string[]) => Promise<unknown>;
  timeoutMs: number;
  log: Logger;
  /** How often an outage is probed with PING; visitor requests are not used as probes. */
  probeIntervalMs?: number;
  /**
   * How long Redis must answer without a failed command before an outage counts as over: a
   * Redis that answers PING but refuses writes (full, with `noeviction`) is one outage, not
   * one a second.
   */
  recoveredAfterMs?: number;
  now?: () => number;
}

export class RedisUnavailable extends Error {
  constructor(readonly reason: string) {
    super(`redis unavailable: ${reason}`);
    this.name = 'RedisUnavailable';
  }
}

/**
 * The reason a log line gives: Redis's error code when it answered with one (`OOM`,
 * `READONLY`; never the rest of its message), else the error's name (a connection error).
 */
function reasonOf(error: unknown): string {
  if (!(error instanceof Error)) return 'error';
  return /^([A-Z][A-Z_]+) /.exec(error.message)?.[1] ?? error.name;
}

/**
 * Wraps the client's command call in the timeout and the outage state. A failed command (no
 * answer in time, a lost connection, or an error answer) makes Redis "down": commands are
 * refused at once while a PING probe runs. An outage spell logs one `warn` when it starts and
 * one `info` when it ends, once Redis has answered every command for `recoveredAfterMs`;
 * commands that fail meanwhile (Redis up, but refusing writes) belong to the same spell.
 */
export function createRedisLink(options: RedisLinkOptions): RedisLink {
  const { timeoutMs, log, probeIntervalMs = 1000, recoveredAfterMs = 30_000, now = Date.now } = options;
  let up = true;
  let closed = false;
  let probe: ReturnType<typeof setInterval> | undefined;
  let probing = false;
  let spell: { startedAt: number; lastFailureAt: number; failures: number } | undefined;

  function withTimeout(args: string[]): Promise<unknown> {
    return new Promise((resolve, reject) => {
      // A timer that fires late (the event loop was busy: a GC, a large render) runs before that
      // turn's socket reads; deciding one step later lets an answer that already arrived count.
      const timer = setTimeout(
        () => setImmediate(() => reject(new RedisUnavailable(`no answer within ${timeoutMs} ms`))),
        timeoutMs,
      );
      options.send(args).then(
        (reply) => {
          clearTimeout(timer);
          resolve(reply);
        },
        (error: unknown) => {
          clearTimeout(timer);
          reject(new RedisUnavailable(reasonOf(error)));
        },
      );
    });
  }

  function markDown(reason: string): void {
    if (closed) return;
    up = false;
    const at = now();
    if (spell) {
      spell.lastFailureAt = at;
      spell.failures += 1;
      return;
    }
    spell = { startedAt: at, lastFailureAt: at, failures: 1 };
    log.log('warn', 'redis_unavailable', { reason, fallback: 'in-memory limits, guards and cache until it is back' });
    // Runs for the whole spell: it probes while Redis is down and ends the spell once it has been quiet.
    probe = setInterval(onTick, probeIntervalMs);
    probe.unref?.();
  }

  function onTick(): void {
    if (!up) {
      void probeOnce();
      return;
    }
    if (!spell || now() - spell.lastFailureAt < recoveredAfterMs) return;
    const { startedAt, failures } = spell;
    spell = undefined;
    clearInterval(probe);
    probe = undefined;
    log.log('info', 'redis_available', { outageSeconds: Math.round((now() - startedAt) / 1000), failedCommands: failures });
  }

  async function probeOnce(): Promise<void> {
    // One probe at a time: a slow Redis must not pile up PINGs.
    if (probing) return;
    probing = true;
    try {
      await withTimeout(['PING']);
      if (!closed) up = true;
    } catch {
      // Still down; the next tick probes again.
    } finally {
      probing = false;
    }
  }

  return {
    async send(args) {
      if (closed) throw new RedisUnavailable('closed');
      if (!up) throw new RedisUnavailable('outage');
      try {
        return await withTimeout([...args]);
      } catch (error) {
        markDown((error as RedisUnavailable).reason);
        throw error;
      }
    },
    healthy: () => spell === undefined && !closed,
    markDown,
    close() {
      closed = true;
      clearInterval(probe);
    },
  };
}
