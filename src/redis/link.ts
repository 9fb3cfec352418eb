import type { Logger } from '../log.js';

/**
 * One connection's worth of Redis as the service uses it: every command bounded by a short
 * timeout, and a known outage answered at once. Redis holds only what the service can also
 * keep in memory, so a caller that gets a rejection falls back to its in-memory behaviour;
 * no visitor request waits longer than one timeout for Redis, or fails because of it.
 */
export interface RedisLink {
  /** Sends one command; rejects after the timeout, or at once while Redis is known down. */
  send(args: readonly string[]): Promise<unknown>;
  /** False from the first failed command until a probe answers again. */
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
}

export class RedisUnavailable extends Error {
  constructor(reason: string) {
    super(`redis unavailable: ${reason}`);
    this.name = 'RedisUnavailable';
  }
}

/**
 * Wraps the client's command call in the timeout and the outage state. An outage logs one
 * `warn` when it starts and one `info` when a probe finds Redis back, never a line per request.
 */
export function createRedisLink(options: RedisLinkOptions): RedisLink {
  const { timeoutMs, log, probeIntervalMs = 1000 } = options;
  let up = true;
  let closed = false;
  let probe: ReturnType<typeof setInterval> | undefined;
  let probing = false;

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
          reject(new RedisUnavailable(error instanceof Error ? error.name : 'error'));
        },
      );
    });
  }

  function markDown(reason: string): void {
    if (!up || closed) return;
    up = false;
    log.log('warn', 'redis_unavailable', { reason, fallback: 'in-memory limits, guards and cache until it is back' });
    probe = setInterval(() => void probeOnce(), probeIntervalMs);
    probe.unref?.();
  }

  function markUp(): void {
    if (up || closed) return;
    up = true;
    clearInterval(probe);
    probe = undefined;
    log.log('info', 'redis_available', {});
  }

  async function probeOnce(): Promise<void> {
    // One probe at a time: a slow Redis must not pile up PINGs.
    if (probing) return;
    probing = true;
    try {
      await withTimeout(['PING']);
      markUp();
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
        markDown(error instanceof Error ? error.message : 'error');
        throw error;
      }
    },
    healthy: () => up && !closed,
    markDown,
    close() {
      closed = true;
      clearInterval(probe);
    },
  };
}
