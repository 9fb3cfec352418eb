/**
 * When the upstream answers 429 it tells us how long to wait (`Retry-After`); when it fails
 * (5xx, no answer in time, our key refused) the next call waits a pause that grows with each
 * failed round (docs/upstream.md "Backing off a failing upstream"). Either way we hold off the
 * calls it applies to until then instead of hammering it. The state sits behind this small
 * interface so a store shared between processes can replace the in-memory default.
 */

/**
 * Which calls one hold-off covers. Reads (GET) and writes (POST: Create Subscriber) are held off
 * apart: a scan that exhausts the upstream's patience with reads must not also silence the
 * subscribe form, which gets its own 429 (and its own hold-off) if the limit covers it too.
 */
export type OperationClass = 'read' | 'write';

/** What a call of one class must know before it goes out. */
export interface HoldState {
  /** Until when (ms since the epoch) calls of this class are held off; in the past when they are not. */
  untilMs: number;
  /** Rounds of failed calls since the upstream last answered one (0: it answered the last). */
  streak: number;
}

export interface HoldOff {
  /** Whether calls of this class are held off, and how many failed rounds lead up to now. */
  state(operation: OperationClass): HoldState | Promise<HoldState>;
  /** Holds off calls of this class until `untilMs`; an earlier time never shortens a longer hold-off. */
  hold(operation: OperationClass, untilMs: number): void | Promise<void>;
  /**
   * A call of this class that went out at `startedAtMs` failed at `failedAtMs`: the streak grows
   * by one when the call began after the last failure was counted (a new round: concurrent calls
   * that fail together count once). Returns the streak.
   */
  failed(operation: OperationClass, startedAtMs: number, failedAtMs: number): number | Promise<number>;
  /** The upstream answered a call of this class: the streak ends. */
  answered(operation: OperationClass): void | Promise<void>;
}

/** The first pause after a failed round: long enough that a 5xx blip is not asked again at once. */
export const BACKOFF_BASE_MS = 1000;
/**
 * The longest pause (docs/upstream.md "Backing off a failing upstream" says why 30 s): at the cap
 * a failing upstream gets one call every 15–30 s, and a recovered one is seen within the cap.
 */
export const BACKOFF_CAP_MS = 30_000;
/** A streak with no failure for this long is forgotten: the next failure starts again at the base. */
export const STREAK_FORGOTTEN_AFTER_MS = 10 * 60_000;

/**
 * The pause after the `streak`-th failed round: base × 2^(streak−1), capped, then jittered to
 * between half and all of that ("equal jitter"), so instances that failed together do not come
 * back together, yet no pause is near zero.
 */
export function backoffPauseMs(streak: number, random: () => number = Math.random): number {
  const ceiling = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** Math.max(0, streak - 1));
  return Math.round(ceiling * (0.5 + random() / 2));
}

/** One process's (or one isolate's) hold-offs: a time and a streak per operation class. */
export function createMemoryHoldOff(now: () => number = Date.now): HoldOff {
  const until: Record<OperationClass, number> = { read: 0, write: 0 };
  const streaks: Record<OperationClass, { count: number; lastFailedAt: number }> = {
    read: { count: 0, lastFailedAt: Number.NEGATIVE_INFINITY },
    write: { count: 0, lastFailedAt: Number.NEGATIVE_INFINITY },
  };
  const streakOf = (operation: OperationClass) => {
    const streak = streaks[operation];
    if (streak.count > 0 && now() - streak.lastFailedAt > STREAK_FORGOTTEN_AFTER_MS) streak.count = 0;
    return streak;
  };
  return {
    state: (operation) => ({ untilMs: until[operation], streak: streakOf(operation).count }),
    hold(operation, untilMs) {
      until[operation] = Math.max(until[operation], untilMs);
    },
    failed(operation, startedAtMs, failedAtMs) {
      const streak = streakOf(operation);
      if (startedAtMs > streak.lastFailedAt || streak.count === 0) streak.count += 1;
      streak.lastFailedAt = Math.max(streak.lastFailedAt, failedAtMs);
      return streak.count;
    },
    answered(operation) {
      streaks[operation].count = 0;
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
