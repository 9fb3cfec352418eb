import type { ExecutionContext, Hono } from 'hono';
import { parseConfig } from '../core/config/config.js';
import { createLogger, type Logger } from '../core/log.js';
import { STALE_IF_ERROR_SECONDS } from '../core/reads/public-reads.js';
import { createBindingRateLimiter, type RateLimitBinding } from '../core/http/rate-limit.js';
import { createRequestIds } from '../core/http/request-ids.js';
import { API_SECURITY_HEADERS } from '../core/http/response-headers.js';
import { createAppForConfig } from '../core/service.js';
import { createWorkersSharedCache } from '../core/reads/shared-tier.js';
import type { ArchiveWatch, WatchStore } from '../core/watch/archive-watch.js';

type Env = Record<string, unknown>;

/** Test seams of the Worker; production uses the runtime's own. */
export interface WorkerOptions {
  fetch?: typeof globalThis.fetch;
  now?: () => number;
  /** Where log lines go (console.log, which Workers logs collect). */
  write?: (line: string) => void;
  /** The Cache API store shared by the isolates of a location (`caches.default`); `null` turns it off. */
  sharedCache?: Cache | null;
}

const GENERIC_ERROR = JSON.stringify({
  ok: false,
  error: { code: 'INTERNAL_ERROR', message: 'The service is not configured correctly.' },
});

/** The binding name of the optional Workers Rate Limiting binding (see wrangler.toml). */
export const RATE_LIMIT_BINDING = 'SUBSCRIBE_RATE_LIMITER';

/** Creates a Worker handler: `{ fetch(request, env, ctx), scheduled(controller, env, ctx) }` with one app per isolate. */
export function createWorker(options: WorkerOptions = {}) {
  const write = options.write ?? ((line: string) => console.log(line));
  // Built on the first request: bindings cannot change within an isolate (a deploy starts new
  // ones), and the in-memory cache lives as long as the app.
  let built: Built | undefined;
  // Ids of the answers a misconfigured isolate gives (a configured one's come from its header rules).
  const newRequestId = createRequestIds();

  function build(env: Env): Built {
    if (built) return built;
    const secrets = [
      stringOrUndefined(env.NEWSLETTER_API_KEY),
      stringOrUndefined(env.TURNSTILE_SECRET_KEY),
      stringOrUndefined(env.ALERT_WEBHOOK_URL),
      stringOrUndefined(env.DEPLOY_HOOK_URL),
    ];
    const log = createLogger({ write, now: options.now, redact: secrets });
    const parsed = parseConfig(env);
    if (!parsed.ok) {
      // Logged once per isolate; the visitor gets a generic 500 and never the details.
      for (const problem of parsed.problems) log.log('error', 'config_error', { problem });
      built = { app: undefined, log };
      return built;
    }
    const { config } = parsed;
    if (config.redisUrl) {
      log.log('warn', 'redis_url_ignored', {
        hint: 'REDIS_URL is for Node instances; on Workers the Cache API tier and the Rate Limiting binding are shared already',
      });
    }
    if (config.subscribeBlockDisposable) {
      log.log('error', 'subscribe_block_disposable_unavailable', {
        hint: 'SUBSCRIBE_BLOCK_DISPOSABLE needs the mailchecker list, loaded on Node only (its 1 MB would not fit a Worker); throwaway domains are not refused here',
      });
    }
    const binding = rateLimitBindingOf(env[RATE_LIMIT_BINDING]);
    const store = options.sharedCache === undefined ? defaultSharedCache() : options.sharedCache;
    const watchState = kvBindingOf(env[WATCH_STATE_BINDING]);
    if (config.deployHookUrl && !watchState) {
      log.log('warn', 'deploy_hook_state_in_memory', {
        hint: `bind a KV namespace as ${WATCH_STATE_BINDING} (wrangler.toml): without it the watch remembers what it saw in this isolate only, and a Cron Trigger run in a new isolate takes its first look again, announcing nothing`,
      });
    }
    const { app, refreshFromUpstream, archiveWatch } = createAppForConfig(config, {
      log,
      fetch: options.fetch,
      now: options.now,
      clientIp: (c) => c.req.header('cf-connecting-ip'),
      rateLimiter: binding ? createBindingRateLimiter(binding) : undefined,
      sharedCache: store
        ? createWorkersSharedCache(store, {
            namespace: config.mode === 'demo' ? 'demo' : (config.apiBaseUrl ?? ''),
            apiKey: config.apiKey ?? '',
            maxAgeSeconds: config.cacheTtlSeconds + STALE_IF_ERROR_SECONDS,
          })
        : undefined,
      // The Cron Trigger refreshes the index just before each look; its runs may land in any
      // isolate, so the state is read from the KV namespace at every one.
      archiveWatch: { store: watchState && createKvWatchStore(watchState), reloadEachTick: true, loadIndex: false, fetch: options.fetch },
    });
    built = { app: app as unknown as Hono, log, refreshFromUpstream, archiveWatch };
    return built;
  }

  return {
    fetch(request: Request, env: Env, ctx: ExecutionContext): Response | Promise<Response> {
      const { app, log } = build(env);
      if (!app) {
        // Still one access line and a request id, so a visitor's report can be matched to the log.
        const requestId = newRequestId();
        log.log('info', 'request', { method: request.method, path: new URL(request.url).pathname, status: 500, requestId });
        return new Response(GENERIC_ERROR, {
          status: 500,
          headers: {
            ...API_SECURITY_HEADERS,
            'Content-Type': 'application/json',
            'Cache-Control': 'no-store',
            'X-Request-Id': requestId,
          },
        });
      }
      return app.fetch(request, env, ctx);
    },

    /**
     * A Cron Trigger (wrangler.toml `[triggers] crons`): reads the archive and the categories from
     * the upstream into the Cache API tier, so visitors find a copy there and none of them waits
     * for a cold archive load (docs/deployment-workers.md). One log line each run.
     */
    async scheduled(controller: { cron: string; scheduledTime: number }, env: Env, ctx: ExecutionContext): Promise<void> {
      const { refreshFromUpstream, archiveWatch, log } = build(env);
      if (!refreshFromUpstream) return;
      const clock = options.now ?? Date.now;
      const started = clock();
      let refreshed = false;
      try {
        const { issues } = await refreshFromUpstream((promise) => ctx.waitUntil(promise));
        refreshed = true;
        log.log('info', 'scheduled_refresh', { cron: controller.cron, issues, ms: clock() - started });
      } catch (error) {
        // The copies stay as they were (stale-if-error); the next run or a visitor tries again.
        log.log('warn', 'scheduled_refresh_failed', {
          cron: controller.cron,
          reason: error instanceof Error ? error.message : 'unknown',
          ms: clock() - started,
        });
      }
      // DEPLOY_HOOK_URL: the index just refreshed is compared with the last look (a failed refresh
      // has nothing new to compare, but a call still due is made).
      await archiveWatch?.tick({ check: refreshed });
    },
  };
}

interface Built {
  app: Hono | undefined;
  log: Logger;
  refreshFromUpstream?: (waitUntil: (promise: Promise<unknown>) => void) => Promise<{ issues: number }>;
  archiveWatch?: ArchiveWatch | undefined;
}

/** The binding name of the optional KV namespace where the archive watch keeps its state (see wrangler.toml). */
export const WATCH_STATE_BINDING = 'DEPLOY_HOOK_STATE';
/** The one key the watch uses in it. */
const WATCH_STATE_KEY = 'archive-watch';

/** The part of a Workers KV binding the watch uses. */
interface KvBinding {
  get(key: string): Promise<string | null>;
  put(key: string, value: string): Promise<void>;
}

function kvBindingOf(value: unknown): KvBinding | undefined {
  return typeof value === 'object' &&
    value !== null &&
    typeof (value as KvBinding).get === 'function' &&
    typeof (value as KvBinding).put === 'function'
    ? (value as KvBinding)
    : undefined;
}

/**
 * The watch's state in a KV namespace, readable by every isolate and location a Cron Trigger
 * runs in. KV is eventually consistent (a write may take up to a minute to show elsewhere), so a
 * run right after one in another location may read the state before it: docs/deployment-workers.md
 * "Build hooks" says what that costs.
 */
function createKvWatchStore(kv: KvBinding): WatchStore {
  return {
    load: async () => (await kv.get(WATCH_STATE_KEY)) ?? undefined,
    save: (state) => kv.put(WATCH_STATE_KEY, state),
  };
}

function stringOrUndefined(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

function rateLimitBindingOf(value: unknown): RateLimitBinding | undefined {
  return typeof value === 'object' && value !== null && typeof (value as RateLimitBinding).limit === 'function'
    ? (value as RateLimitBinding)
    : undefined;
}

/** `caches.default` where the runtime has it (Workers), nothing elsewhere. */
function defaultSharedCache(): Cache | undefined {
  const storage = (globalThis as { caches?: { default?: Cache } }).caches;
  return storage?.default;
}
