import type { Logger } from '../../core/log.js';

export class RedisUnavailable extends Error {
  constructor(readonly reason: string) {
    super(`redis unavailable: ${reason}`);
    this.name = 'RedisUnavailable';
  }
}

/** Redis's error code (`OOM`, never the rest of its message), else the error's name. */
const reasonOf = (error: unknown) => (error instanceof Error ? (/^([A-Z][A-Z_]+) /.exec(error.message)?.[1] ?? error.name) : 'error');

/**
 * Every command bounded by `timeoutMs`. A failed one makes Redis down: commands are refused at once (callers
 * fall back to memory) while PING probes. One line starts an outage spell and one ends it, once every command
 * has been answered for `recoveredAfterMs` (a Redis that answers PING but refuses writes is one outage).
 */
export function createRedisLink(options: {
  send: (args: string[]) => Promise<unknown>;
  timeoutMs: number;
  log: Logger;
  probeIntervalMs?: number | undefined;
  recoveredAfterMs?: number | undefined;
  now?: () => number;
}) {
  const { timeoutMs, log, probeIntervalMs = 1000, recoveredAfterMs = 30_000, now = Date.now } = options;
  let up = true;
  let closed = false;
  let probe: NodeJS.Timeout | undefined;
  let probing = false;
  let spell: { startedAt: number; lastFailureAt: number; failures: number } | undefined;

  function withTimeout(args: string[]): Promise<unknown> {
    let timer: NodeJS.Timeout | undefined;
    // A late timer runs before that turn's socket reads: one step later, an answer that arrived counts.
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => setImmediate(() => reject(new RedisUnavailable(`no answer within ${timeoutMs} ms`))), timeoutMs);
    });
    const answer = options.send(args).catch((error: unknown) => Promise.reject(new RedisUnavailable(reasonOf(error))));
    return Promise.race([answer, late]).finally(() => clearTimeout(timer));
  }

  // Also told of a connection error the client reports before any command notices.
  function markDown(reason: string): void {
    if (closed) return;
    up = false;
    if (!spell) {
      spell = { startedAt: now(), lastFailureAt: 0, failures: 0 };
      log.log('warn', 'redis_unavailable', { reason, fallback: 'in-memory limits, guards and cache until it is back' });
      probe = setInterval(onTick, probeIntervalMs).unref();
    }
    spell.lastFailureAt = now();
    spell.failures += 1;
  }

  async function onTick() {
    if (!up) {
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
      return;
    }
    if (!spell || now() - spell.lastFailureAt < recoveredAfterMs) return;
    const { startedAt, failures } = spell;
    spell = undefined;
    clearInterval(probe);
    log.log('info', 'redis_available', { outageSeconds: Math.round((now() - startedAt) / 1000), failedCommands: failures });
  }

  return {
    async send(args: readonly string[]): Promise<unknown> {
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
