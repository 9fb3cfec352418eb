import { LRUCache } from 'lru-cache';

type RateLimitDecision = { allowed: boolean; retryAfterSeconds: number };
type RateWindow = { count: number; startedAt: number };
export type RateLimiter = { hit(key: string): RateLimitDecision | Promise<RateLimitDecision> };

/** Bounded: a flood of new IPs evicts the oldest counters instead of growing memory. */
export function createMemoryRateLimiter({ limit, windowMs, now }: { limit: number; windowMs: number; now: () => number }): RateLimiter {
  const windows = new LRUCache<string, RateWindow>({ max: 50_000, ttl: windowMs, perf: { now }, ttlResolution: 0 });
  return {
    hit(key) {
      const time = now();
      let current = windows.get(key);
      if (!current || time - current.startedAt >= windowMs) windows.set(key, (current = { count: 0, startedAt: time }));
      current.count += 1;
      const retryAfterSeconds = Math.max(1, Math.ceil((current.startedAt + windowMs - time) / 1000));
      return { allowed: current.count <= limit, retryAfterSeconds };
    },
  };
}

export type RateLimitBinding = { limit(options: { key: string }): Promise<{ success: boolean }> };

/** The binding tells no reset time, so Retry-After is its period (wrangler.toml: 60 s). */
export const createBindingRateLimiter = (binding: RateLimitBinding): RateLimiter => ({
  hit: async (key) => ({ allowed: (await binding.limit({ key })).success, retryAfterSeconds: 60 }),
});
