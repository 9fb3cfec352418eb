/**
 * When the upstream may be called again after it answered 429 with `Retry-After`. Behind an
 * interface so that several processes can share one hold-off (src/redis/hold-off.ts): one
 * instance's 429 then holds off all of them, not only itself.
 */
export interface HoldOff {
  /** The time (ms since the epoch) before which no call goes out; 0 or past when none. */
  until(): number | Promise<number>;
  /**
   * The upstream asked us to wait until `untilMs`; an earlier time never shortens a hold.
   * Settles once every instance sharing the hold-off will see it.
   */
  hold(untilMs: number): void | Promise<void>;
}

/** The hold-off of one process: a single time in memory. */
export function createMemoryHoldOff(): HoldOff {
  let blockedUntil = 0;
  return {
    until: () => blockedUntil,
    hold(untilMs) {
      blockedUntil = Math.max(blockedUntil, untilMs);
    },
  };
}
