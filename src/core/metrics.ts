/** Labels are closed sets: route templates, never raw paths. */
export interface Metrics {
  request(route: string, method: string, status: number, seconds: number): void;
  cacheRead(state: 'HIT' | 'MISS' | 'STALE'): void;
  staleAnswer(route: string, reason: string): void;
  cacheEviction(reason: 'evict'): void;
  upstreamCall(operation: string, seconds: number, error?: unknown): void;
  upstreamRetry(): void;
  upstreamHoldOff(seconds: number): void;
  subscribe(outcome: string, reason?: string): void;
  subscribeSurge(active: boolean): void;
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
