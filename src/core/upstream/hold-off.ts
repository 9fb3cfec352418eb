/* docs/upstream.md "Backing off a failing upstream". Behind an interface so Redis can share the state between processes. */

/** Held off apart: a scan that exhausts the upstream's patience must not silence subscribe. */
export type OperationClass = 'read' | 'write';

/** `streak`: rounds of failed calls since the upstream last answered one. */
type HoldState = { untilMs: number; streak: number };

export interface HoldOff {
  state(operation: OperationClass): HoldState | Promise<HoldState>;
  hold(operation: OperationClass, untilMs: number): void | Promise<void>;
  /** Calls that fail together count once; returns the streak. */
  failed(operation: OperationClass, startedAtMs: number, failedAtMs: number): number | Promise<number>;
  answered(operation: OperationClass): void | Promise<void>;
}

const BACKOFF_BASE_MS = 1000;
export const BACKOFF_CAP_MS = 30_000;
export const STREAK_FORGOTTEN_AFTER_MS = 10 * 60_000;

/** Equal jitter: instances that failed together come back apart, yet never at once. */
export function backoffPauseMs(streak: number, random: () => number): number {
  const ceiling = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** Math.max(0, streak - 1));
  return Math.round(ceiling * (0.5 + random() / 2));
}

export function createMemoryHoldOff(now: () => number = Date.now): HoldOff {
  const initial = () => ({ untilMs: 0, streak: 0, lastFailedAt: Number.NEGATIVE_INFINITY });
  const classes = { read: initial(), write: initial() };
  const current = (operation: OperationClass) => {
    const held = classes[operation];
    if (held.streak > 0 && now() - held.lastFailedAt > STREAK_FORGOTTEN_AFTER_MS) held.streak = 0;
    return held;
  };
  return {
    state: (operation) => ({ untilMs: classes[operation].untilMs, streak: current(operation).streak }),
    hold(operation, untilMs) {
      classes[operation].untilMs = Math.max(classes[operation].untilMs, untilMs);
    },
    failed(operation, startedAtMs, failedAtMs) {
      const held = current(operation);
      if (startedAtMs > held.lastFailedAt || held.streak === 0) held.streak += 1;
      held.lastFailedAt = Math.max(held.lastFailedAt, failedAtMs);
      return held.streak;
    },
    answered(operation) {
      classes[operation].streak = 0;
    },
  };
}
