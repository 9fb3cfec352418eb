import { LRUCache } from 'lru-cache';
import { UpstreamError } from '../upstream/transport.js';

type ReadBudgetOptions = { totalPerMinute: number; perClientPerMinute: number; now: () => number; onExhausted?: (scope: Scope) => void };

export class ReadBudgetExceeded extends UpstreamError {
  constructor(retryAfterSeconds: number) {
    super('rate_limited', 'the read budget for upstream calls is spent', { retryAfterSeconds });
    this.name = 'ReadBudgetExceeded';
  }
}

type Scope = 'client' | 'total';
/** No closure: one is kept per client. */
type Bucket = { tokens: number; at: number; dry: boolean };

const MAX_CLIENTS = 50_000;
const BURST_SHARE = 0.25;

const bucketRule = (perMinute: number) => ({ capacity: Math.max(1, Math.ceil(perMinute * BURST_SHARE)), perMs: perMinute / 60_000 });

export type ReadBudget = ReturnType<typeof createReadBudget>;

// A token bucket per client IP and one for everyone, so a scan cannot spend the upstream's rate limit (docs/contract.md).
export function createReadBudget(options: ReadBudgetOptions) {
  const { now, onExhausted } = options;
  const rules = { total: bucketRule(options.totalPerMinute), client: bucketRule(options.perClientPerMinute) };
  const total: Bucket = { tokens: rules.total.capacity, at: now(), dry: false };
  const clients = new LRUCache<string, Bucket>({ max: MAX_CLIENTS });

  function check(bucket: Bucket, scope: Scope, time: number): void {
    const rule = rules[scope];
    bucket.tokens = Math.min(rule.capacity, bucket.tokens + Math.max(0, time - bucket.at) * rule.perMs);
    bucket.at = time;
    if (bucket.tokens >= 1) return;
    if (!bucket.dry) onExhausted?.(scope);
    bucket.dry = true;
    throw new ReadBudgetExceeded(Math.max(1, Math.ceil((1 - bucket.tokens) / rule.perMs / 1000)));
  }

  return {
    take(client: string | undefined) {
      const time = now();
      let own = client === undefined ? undefined : clients.get(client);
      if (client !== undefined && !own) clients.set(client, (own = { tokens: rules.client.capacity, at: time, dry: false }));
      // The client's own bucket first: one address over its share never spends everyone's.
      if (own) check(own, 'client', time);
      check(total, 'total', time);
      for (const bucket of own ? [total, own] : [total]) {
        bucket.tokens -= 1;
        bucket.dry = false;
      }
    },
  };
}
