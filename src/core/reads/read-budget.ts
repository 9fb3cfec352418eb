import { LRUCache } from 'lru-cache';
import { UpstreamError } from '../upstream/transport.js';

/**
 * How many cold upstream reads visitors may cause (docs/contract.md "Availability under abuse"): token buckets, one per client IP and one
 * for everyone, so a scan cannot spend the upstream's rate limit that subscribing needs too. `take` throws ReadBudgetExceeded when no read
 * is left.
 */
export interface ReadBudget {
  take(client: string | undefined): void;
}

interface ReadBudgetOptions {
  totalPerMinute: number;
  perClientPerMinute: number;
  now: () => number;
  /** A bucket ran dry: one call per dry spell. */
  onExhausted?: (scope: 'client' | 'total') => void;
}

/** A 503 UPSTREAM_UNAVAILABLE with Retry-After, or the stale copy where one exists. */
export class ReadBudgetExceeded extends UpstreamError {
  constructor(retryAfterSeconds: number) {
    super('rate_limited', 'the read budget for upstream calls is spent', { retryAfterSeconds });
    this.name = 'ReadBudgetExceeded';
  }
}

const MAX_CLIENTS = 50_000;

/** A bucket of `perMinute` tokens holding at most 15 seconds' worth; `refill` says the ms until it holds one. */
function createBucket(perMinute: number, at: number) {
  const capacity = Math.max(1, Math.ceil(perMinute / 4));
  const perMs = perMinute / 60_000;
  const bucket = {
    tokens: capacity,
    at,
    dry: false,
    refill(time: number): number {
      bucket.tokens = Math.min(capacity, bucket.tokens + Math.max(0, time - bucket.at) * perMs);
      bucket.at = time;
      return bucket.tokens >= 1 ? 0 : (1 - bucket.tokens) / perMs;
    },
  };
  return bucket;
}

export function createReadBudget(options: ReadBudgetOptions): ReadBudget {
  const { now, onExhausted } = options;
  const total = createBucket(options.totalPerMinute, now());
  const clients = new LRUCache<string, typeof total>({ max: MAX_CLIENTS });

  function refuse(bucket: typeof total, scope: 'client' | 'total', waitMs: number): never {
    if (!bucket.dry) onExhausted?.(scope);
    bucket.dry = true;
    throw new ReadBudgetExceeded(Math.max(1, Math.ceil(waitMs / 1000)));
  }

  return {
    take(client) {
      const time = now();
      // A read whose address is unknown counts in the total only.
      let own = client === undefined ? undefined : clients.get(client);
      if (client !== undefined && !own) clients.set(client, (own = createBucket(options.perClientPerMinute, time)));
      // The client's own bucket first: one address over its share never spends everyone's.
      const ownWait = own?.refill(time) ?? 0;
      if (own && ownWait > 0) refuse(own, 'client', ownWait);
      const totalWait = total.refill(time);
      if (totalWait > 0) refuse(total, 'total', totalWait);
      for (const bucket of own ? [own, total] : [total]) {
        bucket.tokens -= 1;
        bucket.dry = false;
      }
    },
  };
}
