/**
 * When the upstream answers 429 it tells us how long to wait (`Retry-After`); we hold off the
 * calls it applies to until then instead of hammering it. The state sits behind this small
 * interface so a store shared between processes can replace the in-memory default.
 */

/**
 * Which calls one hold-off covers. Reads (GET) and writes (POST: Create Subscriber) are held off
 * apart: a scan that exhausts the upstream's patience with reads must not also silence the
 * subscribe form, which gets its own 429 (and its own hold-off) if the limit covers it too.
 */
export type OperationClass = 'read' | 'write';

export interface HoldOff {
  /** Until when (ms since the epoch) calls of this class are held off; in the past when they are not. */
  until(operation: OperationClass): number | Promise<number>;
  /** Holds off calls of this class until `untilMs`; an earlier time never shortens a longer hold-off. */
  hold(operation: OperationClass, untilMs: number): void | Promise<void>;
}

/** One process's (or one isolate's) hold-offs: a time per operation class. */
export function createMemoryHoldOff(): HoldOff {
  const until: Record<OperationClass, number> = { read: 0, write: 0 };
  return {
    until: (operation) => until[operation],
    hold(operation, untilMs) {
      until[operation] = Math.max(until[operation], untilMs);
    },
  };
}

/** What a log line says when a 429 starts a hold-off: which call was refused, and until when. */
export interface HoldOffStart {
  operation: OperationClass;
  /** Method and path of the refused call (`GET /v1/newsletter/issues`): never the query or a header. */
  call: string;
  untilMs: number;
  retryAfterSeconds: number;
}
