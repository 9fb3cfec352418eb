import { LRUCache } from 'lru-cache';
import { UpstreamError } from '../upstream/transport.js';

/**
 * How many cold upstream reads visitors may cause (docs/contract.md "Availability under abuse"):
 * token buckets, one per client IP and one for everyone, so a scan cannot spend the upstream's
 * rate limit that subscribing needs too.
 */
export interface ReadBudget {
  /** Throws ReadBudgetExceeded when no read is left. */
  take(client: string | undefined): void;
}

interface ReadBudgetOptions {
  totalPerMinute: number;
  perClientPerMinute: number;
  now: () => number;
  /** Client buckets kept at most (default 50,000). */
  maxClients?: number;
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

/** A bucket holds at most 15 seconds' worth of tokens. */
const BURST_SHARE = 0.25;

interface Bucket {
  tokens: number;
  at: number;
  dry: boolean;
}

function bucketRule(perMinute: number) {
  return { capacity: Math.max(1, Math.ceil(perMinute * BURST_SHARE)), perMs: perMinute / 60_000 };
}

export function createReadBudget(options: ReadBudgetOptions): ReadBudget {
  const { now, onExhausted } = options;
  const totalRule = bucketRule(options.totalPerMinute);
  const clientRule = bucketRule(options.perClientPerMinute);
  const total: Bucket = { tokens: totalRule.capacity, at: now(), dry: false };
  const clients = new LRUCache<string, Bucket>({ max: options.maxClients ?? 50_000 });

  /** Refills `bucket`; the ms until it holds one token. */
  function refill(bucket: Bucket, rule: ReturnType<typeof bucketRule>, time: number): number {
    bucket.tokens = Math.min(rule.capacity, bucket.tokens + Math.max(0, time - bucket.at) * rule.perMs);
    bucket.at = time;
    return bucket.tokens >= 1 ? 0 : (1 - bucket.tokens) / rule.perMs;
  }

  function refuse(bucket: Bucket, scope: 'client' | 'total', waitMs: number): never {
    if (!bucket.dry) onExhausted?.(scope);
    bucket.dry = true;
    throw new ReadBudgetExceeded(Math.max(1, Math.ceil(waitMs / 1000)));
  }

  return {
    take(client) {
      const time = now();
      // A read whose address is unknown counts in the total only.
      let own = client === undefined ? undefined : clients.get(client);
      if (client !== undefined && !own) {
        own = { tokens: clientRule.capacity, at: time, dry: false };
        clients.set(client, own);
      }
      // The client's own bucket first: one address over its share never spends everyone's.
      const ownWait = own ? refill(own, clientRule, time) : 0;
      if (own && ownWait > 0) refuse(own, 'client', ownWait);
      const totalWait = refill(total, totalRule, time);
      if (totalWait > 0) refuse(total, 'total', totalWait);
      total.tokens -= 1;
      total.dry = false;
      if (own) {
        own.tokens -= 1;
        own.dry = false;
      }
    },
  };
}
