/**
 * What the service tells an operator about itself, as it happens: one call per fact, made
 * where that fact is already known (the access log, the read-through cache, the transport,
 * the subscribe route). The default does nothing, so the Worker pays for none of it; the Node
 * entry injects the Prometheus implementation of src/admin/ (which the Worker never imports).
 * Label values are closed sets: route templates, never raw paths or slugs.
 */
export interface Metrics {
  /** One answered request: `route` is the matched route template (or `other`). */
  request(route: string, method: string, status: number, seconds: number): void;
  /** How a read of the upstream-data cache was answered. */
  cacheRead(state: 'HIT' | 'MISS' | 'STALE'): void;
  /**
   * A request answered with a stale copy, by route template and why: a refresh under way
   * (`revalidating`) or the reason of the failure spell under way (src/upstream-failures.ts).
   */
  staleAnswer(route: string, reason: string): void;
  /** An entry the upstream-data cache dropped on its own: over its byte budget, or expired. */
  cacheEviction(reason: 'evict' | 'expire'): void;
  /**
   * One call of an upstream operation (retries included), and how long it took: `error` is
   * what it threw, absent when it succeeded (the implementation names the outcome).
   */
  upstreamCall(operation: string, seconds: number, error?: unknown): void;
  /** An upstream attempt failed and is about to be retried. */
  upstreamRetry(): void;
  /** Seconds that an upstream 429 added to the hold-off during which no call goes out. */
  upstreamHoldOff(seconds: number): void;
  /** How a subscribe attempt ended: the `subscribe` log line's outcome, and its reason when rejected. */
  subscribe(outcome: string, reason?: string): void;
  /** A subscribe surge started (true) or ended (false): docs/subscribe.md "Surges". */
  subscribeSurge(active: boolean): void;
  /** Node's listener closed a connection to make room (docs/node-http.md "A crowd at one address"). */
  connectionShed(reason: ConnectionShedReason): void;
}

/** Why a connection was closed to make room: idle kept-alive, a request head not sent in time, an address over its share. */
export type ConnectionShedReason = 'idle' | 'slow_head' | 'over_share';

/** The default: records nothing. */
export const noopMetrics: Metrics = {
  request() {},
  cacheRead() {},
  staleAnswer() {},
  cacheEviction() {},
  upstreamCall() {},
  upstreamRetry() {},
  upstreamHoldOff() {},
  subscribe() {},
  subscribeSurge() {},
  connectionShed() {},
};
