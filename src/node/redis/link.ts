import type { Logger } from '../../core/log.js';

/**
 * Every command bounded by a short timeout, a known outage answered at once: a caller falls back to
 * memory, and no visitor waits longer than one timeout for Redis, or fails because of it.
 */
export interface RedisLink {
  send(args: readonly string[]): Promise<unknown>;
  /** False during an outage spell. */
  healthy(): boolean;
  /** A connection error the client reported before any command noticed. */
  markDown(reason: string): void;
  close(): void;
}

export interface RedisLinkOptions {
  send: (args: string[]) => Promise<unknown>;
  timeoutMs: number;
  log: Logger;
  /** Visitor requests are never probes. */
  probeIntervalMs?: number;
  /** A Redis that answers PING but refuses writes is one outage, not one a second. */
  recoveredAfterMs?: number;
  now?: () => number;
}

export class RedisUnavailable extends Error {
  constructor(readonly reason: string) {
    super(`redis unavailable: ${reason}`);
    this.name = 'RedisUnavailable';
  }
}

/** Redis's error code (`OOM`, never the rest of its message), else the error's name. */
function reasonOf(error: unknown): string {
  if (!(error instanceof Error)) return 'error';
  return /^([A-Z][A-Z_]+) /.exec(error.message)?.[1] ?? error.name;
}

/**
 * A failed command makes Redis down: commands are refused at once while PING probes. One line
 * starts an outage spell and one ends it, once every command has been answered for `recoveredAfterMs`.
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
      // A late timer runs before that turn's socket reads: one step later, an answer that arrived counts.
      const timer = setTimeout(() => setImmediate(() => reject(new RedisUnavailable(`no answer within ${timeoutMs} ms`))), timeoutMs);
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
    if (probing) return;
    probing = true;
    // Still down on a failure: the next tick probes again.
    await withTimeout(['PING']).then(
      () => {
        if (!closed) up = true;
      },
      () => undefined,
    );
    probing = false;
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
