// The parts of the pool's `cloudflare:test` module these suites use (its own types need the
// full Workers type set, which the Node suites must not see).
declare module 'cloudflare:test' {
  import type { ExecutionContext } from 'hono';
  export const env: Record<string, unknown>;
  export function createExecutionContext(): ExecutionContext;
  export function waitOnExecutionContext(ctx: ExecutionContext): Promise<void>;
}

// Workers' CacheStorage has the zone's default cache.
interface CacheStorage {
  readonly default: Cache;
}
