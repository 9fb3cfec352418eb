export type ConnectionShedReason = 'idle' | 'slow_head' | 'over_share';

/** Also the Metrics type, so each method is written once. Labels are closed sets: route templates, never raw paths. */
export const noopMetrics = {
  request(_route: string, _method: string, _status: number, _seconds: number) {},
  cacheRead(_state: 'HIT' | 'MISS' | 'STALE') {},
  staleAnswer(_route: string, _reason: string) {},
  cacheEviction(_reason: 'evict') {},
  upstreamCall(_operation: string, _seconds: number, _error?: unknown) {},
  upstreamRetry() {},
  upstreamHoldOff(_seconds: number) {},
  subscribe(_outcome: string, _reason?: string) {},
  subscribeSurge(_active: boolean) {},
  connectionShed(_reason: ConnectionShedReason) {},
};

export type Metrics = typeof noopMetrics;
