/**
 * What the service tells an operator, one call per fact where the fact is known. The default does
 * nothing, so the Worker pays for none of it; Node injects node/admin/prometheus.ts. Labels are
 * closed sets: route templates, never raw paths or slugs.
 */
export interface Metrics {
  /** `route`: the matched route template (or `other`). */
  request(route: string, method: string, status: number, seconds: number): void;
  cacheRead(state: 'HIT' | 'MISS' | 'STALE'): void;
  /** `reason`: `revalidating`, or the failure spell's (failure-policy.ts). */
  staleAnswer(route: string, reason: string): void;
  cacheEviction(reason: 'evict' | 'expire'): void;
  /** One call, retries included; `error` is what it threw. */
  upstreamCall(operation: string, seconds: number, error?: unknown): void;
  upstreamRetry(): void;
  /** Seconds that a 429 added to the hold-off. */
  upstreamHoldOff(seconds: number): void;
  /** The `subscribe` log line's outcome, and its reason when rejected. */
  subscribe(outcome: string, reason?: string): void;
  subscribeSurge(active: boolean): void;
  /** docs/node-http.md "A crowd at one address". */
  connectionShed(reason: ConnectionShedReason): void;
}

export type ConnectionShedReason = 'idle' | 'slow_head' | 'over_share';

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
