import type { ExecutionContext } from 'hono';
import { parseConfig, secretsOf } from '../core/config/config.js';
import { createBindingRateLimiter, type RateLimitBinding } from '../core/subscribe/guards.js';
import { createRequestIds } from '../core/http/request-ids.js';
import { API_SECURITY_HEADERS } from '../core/http/response-headers.js';
import { createLogger } from '../core/log.js';
import { cachePolicies, NO_STORE, sharedTierMaxAgeSeconds } from '../core/reads/cache-policies.js';
import { createWorkersSharedCache } from '../core/reads/shared-tier.js';
import { createAppForConfig } from '../core/app.js';

type Env = Record<string, unknown>;
type KvNamespace = { get(key: string): Promise<string | null>; put(key: string, value: string): Promise<void> };

const WATCH_STATE_BINDING = 'DEPLOY_HOOK_STATE';
const WATCH_STATE_KEY = 'archive-watch';
const HINTS = {
  redis: 'REDIS_URL is for Node: on Workers the Cache API tier and the Rate Limiting binding are shared already',
  disposable: 'SUBSCRIBE_BLOCK_DISPOSABLE needs a list too large for a Worker (loaded on Node only): throwaway domains are not refused',
  watchState: `bind a KV namespace as ${WATCH_STATE_BINDING}: without it a Cron run in a new isolate looks afresh, announcing nothing`,
};
const GENERIC_ERROR = '{"ok":false,"error":{"code":"INTERNAL_ERROR","message":"The service is not configured correctly."}}';

// `sharedCache`: default `caches.default`; `null` turns the shared tier off.
type WorkerOptions = { fetch?: typeof globalThis.fetch; now?: () => number; write?: (line: string) => void; sharedCache?: Cache | null };

export function createWorker(options: WorkerOptions = {}) {
  const write = options.write ?? ((line: string) => console.log(line));
  // Built on the first request: bindings cannot change within an isolate.
  let built: ReturnType<typeof build> | undefined;
  const newRequestId = createRequestIds();

  function build(env: Env) {
    const log = createLogger({ write, now: options.now, redact: secretsOf(env) });
    const parsed = parseConfig(env);
    if (!parsed.ok) {
      for (const problem of parsed.problems) log.log('error', 'config_error', { problem });
      return { log };
    }
    const { config } = parsed;
    if (config.redisUrl) log.log('warn', 'redis_url_ignored', { hint: HINTS.redis });
    if (config.subscribeBlockDisposable) log.log('error', 'subscribe_block_disposable_unavailable', { hint: HINTS.disposable });
    const binding = bindingOf<RateLimitBinding>(env.SUBSCRIBE_RATE_LIMITER, 'limit');
    const { sharedCache: store = (globalThis as { caches?: { default?: Cache } }).caches?.default } = options;
    const kv = bindingOf<KvNamespace>(env[WATCH_STATE_BINDING], 'get', 'put');
    if (config.deployHookUrl && !kv) log.log('warn', 'deploy_hook_state_in_memory', { hint: HINTS.watchState });
    // An isolate has no timer for a summary, and may end unannounced: a line each request.
    const service = createAppForConfig(
      { ...config, accessLog: 'all' },
      {
        log,
        fetch: options.fetch,
        now: options.now,
        clientIp: (c) => c.req.header('cf-connecting-ip'),
        rateLimiter: binding && createBindingRateLimiter(binding),
        sharedCache: store
          ? createWorkersSharedCache(store, {
              namespace: config.mode === 'demo' ? 'demo' : (config.apiBaseUrl ?? ''),
              apiKey: config.apiKey ?? '',
              maxAgeSeconds: sharedTierMaxAgeSeconds(cachePolicies(config)),
            })
          : undefined,
        // Cron runs land in any isolate: the state is read from KV at each (docs/deployment-workers.md "Build hooks").
        archiveWatch: {
          store: kv && { load: async () => (await kv.get(WATCH_STATE_KEY)) ?? undefined, save: (state) => kv.put(WATCH_STATE_KEY, state) },
          reloadEachTick: true,
          loadIndex: false,
        },
      },
    );
    return { log, service };
  }

  return {
    fetch(request: Request, env: Env, ctx: ExecutionContext): Response | Promise<Response> {
      const { service, log } = (built ??= build(env));
      if (service) return service.app.fetch(request, env, ctx);
      // An access line and a request id all the same, to match a visitor's report to the log.
      const requestId = newRequestId();
      log.log('info', 'request', { method: request.method, path: new URL(request.url).pathname, status: 500, requestId });
      return new Response(GENERIC_ERROR, {
        status: 500,
        headers: { ...API_SECURITY_HEADERS, 'Content-Type': 'application/json', 'Cache-Control': NO_STORE, 'X-Request-Id': requestId },
      });
    },

    async scheduled(controller: { cron: string; scheduledTime: number }, env: Env, ctx: ExecutionContext): Promise<void> {
      const { service, log } = (built ??= build(env));
      if (!service) return;
      const clock = options.now ?? Date.now;
      const started = clock();
      let refreshed = false;
      try {
        const { issues } = await service.refreshFromUpstream((promise) => ctx.waitUntil(promise));
        refreshed = true;
        log.log('info', 'scheduled_refresh', { cron: controller.cron, issues, ms: clock() - started });
      } catch (error) {
        const reason = error instanceof Error ? error.message : 'unknown';
        log.log('warn', 'scheduled_refresh_failed', { cron: controller.cron, reason, ms: clock() - started });
      }
      // After a failed refresh nothing is new, but a hook call still due is made.
      await service.archiveWatch?.tick({ check: refreshed });
    },
  };
}

function bindingOf<T>(value: unknown, ...methods: string[]): T | undefined {
  const object = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
  return methods.every((name) => typeof object[name] === 'function') ? (value as T) : undefined;
}
