import { Hono, type Context, type MiddlewareHandler } from 'hono';
import { cors } from 'hono/cors';
import type { Config } from './config/config.js';
import { ApiError, renderError, cutOffStatus } from './http/errors.js';
import { publicCacheControl } from './http/read-reply.js';
import { accessLogMiddleware, createAccessLog } from './http/access-log.js';
import { createFreshReplies } from '../node/fresh-replies.js';
import { silentLogger, type Logger } from './log.js';
import { noopMetrics, type Metrics } from './metrics.js';
import { createOriginPolicy, listenOrigins } from './http/origins.js';
import { createArchiveFeeds } from './reads/archive-feeds.js';
import { splitMemoryBudget } from './reads/memory-budget.js';
import { createReadBudget, ReadBudgetExceeded } from './reads/read-budget.js';
import { createPublicReads, STALE_IF_ERROR_SECONDS, STALE_WHILE_REVALIDATE_SECONDS } from './reads/public-reads.js';
import { createMemoryRateLimiter, type RateLimiter } from './http/rate-limit.js';
import { CORS_POLICY, DOCUMENT_SECURITY_HEADERS, corsGrant, createHeaderRules, createResponseHeaders } from './http/response-headers.js';
import type { SharedTier } from './reads/shared-tier.js';
import type { BodyEncoder } from './reads/rendered-json.js';
import type { RepeatGuard } from './subscribe/guards.js';
import { createCategoriesRoutes } from './routes/categories.js';
import { createArchiveQueries } from './routes/archive-query.js';
import { createIssuesRoutes } from './routes/issues.js';
import { createSubscribeRoutes } from './routes/subscribe.js';
import { createTurnstileChallenge, type TurnstileChallengeOptions } from './subscribe/challenge.js';
import { createAlertWebhook } from './subscribe/alert-webhook.js';
import { createMemorySurgeCounter, createSurgeWatch, type SurgeCounter } from './subscribe/surge.js';
import type { UpstreamClient } from './upstream/newsletter-api.js';
import { UpstreamError } from './upstream/transport.js';
import { readErrorFromUpstream, createFailureSpells } from './upstream/failure-policy.js';
import { createArchiveWatch, type WatchLease, type WatchStore } from './watch/archive-watch.js';
import { createDeployHook, describeHookUrl } from './watch/deploy-hook.js';

export interface AppDeps {
  config: Config;
  upstream: UpstreamClient;
  /** Wall clock in ms for caches and limits (tests inject a fake one). */
  now?: () => number;
  log?: Logger;
  /** The visitor's IP: the socket (and trusted proxies) on Node, `CF-Connecting-IP` on Workers. */
  clientIp?: (c: Context) => string | undefined;
  rateLimiter?: RateLimiter;
  /**
   * Answers GET/HEAD of every path outside /api/ (demo mode serves the example site with it).
   * Without it, only the four API routes exist.
   */
  site?: MiddlewareHandler;
  /** A cache tier shared between isolates (Workers' Cache API) or instances (Redis on Node). */
  sharedCache?: SharedTier;
  /** Test seams of the Turnstile check (TURNSTILE_SECRET_KEY): its fetch and timeout. */
  turnstile?: Pick<TurnstileChallengeOptions, 'fetch' | 'timeoutMs'>;
  /** Addresses forwarded lately, shared between instances (Redis); per process by default. */
  repeatGuard?: RepeatGuard;
  /** Subscribe attempts counted for every instance (Redis); this process's memory by default. */
  surgeCounter?: SurgeCounter;
  /** SUBSCRIBE_BLOCK_DISPOSABLE's list, loaded by the entry (src/core/subscribe/disposable-domains.ts). */
  isDisposableDomain?: (domain: string) => boolean;
  /** Test seam of the ALERT_WEBHOOK_URL sender: its fetch and timeout. */
  alertWebhook?: { fetch?: typeof globalThis.fetch; timeoutMs?: number };
  /** How DEPLOY_HOOK_URL's watch runs where it runs (src/core/watch/archive-watch.ts); this process alone by default. */
  archiveWatch?: ArchiveWatchDeps;
  /** Told of requests, cache reads and subscribe outcomes (Prometheus on Node; nothing by default). */
  metrics?: Metrics;
  /** Compresses each cached JSON copy once (Node: node/compression.ts); none on Workers, whose edge compresses. */
  encodeBody?: BodyEncoder;
  /**
   * Whether the listener's REQUEST_TIMEOUT_SECONDS cut this request off (Node:
   * node-server-limits.ts `timedOutByListener`), so it is logged 408, not 499; never on Workers.
   */
  requestTimedOut?: (c: Context) => boolean;
}

/** What the entry that runs the archive watch decides: where its state lives, who watches, and the hook's test seams. */
export interface ArchiveWatchDeps {
  /** Redis (several Node instances) or a KV namespace (Workers); this process's memory by default. */
  store?: WatchStore;
  /** Read the store again at every tick (Workers: another isolate may have run the last one). */
  reloadEachTick?: boolean;
  /** One watcher among instances (Redis); none: this instance always watches. */
  lease?: WatchLease;
  /** How long a change found waits before the call (see ArchiveWatchOptions.settleMs); 0 by default. */
  settleMs?: number;
  /** false: each tick takes the index only when a fresh copy is held (the Cron Trigger refreshed it just before). */
  loadIndex?: boolean;
  fetch?: typeof globalThis.fetch;
  timeoutMs?: number;
}

/** The four public paths and the methods each answers (HEAD comes with GET; OPTIONS is the preflight). */
const PUBLIC_PATHS = {
  '/api/issues': ['GET', 'HEAD', 'OPTIONS'],
  '/api/issues/:slug': ['GET', 'HEAD', 'OPTIONS'],
  '/api/categories': ['GET', 'HEAD', 'OPTIONS'],
  '/api/subscribe': ['POST', 'OPTIONS'],
} as const;

/**
 * The example site's pages (demo mode): scripts and styles from this origin only; issue
 * images may come from any https host; issue HTML is shown in a sandboxed iframe. With
 * Turnstile on, its script and frame come from challenges.cloudflare.com.
 */
function siteSecurityHeaders(turnstile: boolean): Readonly<Record<string, string>> {
  const challenge = turnstile ? ' https://challenges.cloudflare.com' : '';
  return {
    ...DOCUMENT_SECURITY_HEADERS,
    'Content-Security-Policy':
      `default-src 'self'; script-src 'self'${challenge}; style-src 'self' 'unsafe-inline'; img-src 'self' https: data:; ` +
      `connect-src 'self'; frame-src 'self'${challenge}; frame-ancestors 'none'; base-uri 'none'; form-action 'self'; object-src 'none'`,
    // no-referrer would make the site's own no-JS form post arrive as `Origin: null` (a 403).
    'Referrer-Policy': 'strict-origin-when-cross-origin',
  };
}

/**
 * Creates the whole service from its dependencies: middleware, the four routes and one error
 * path, with the cache counters the Node entry logs on shutdown and what Node's fresh-read
 * path answers with. No globals.
 */
export function createApp(deps: AppDeps) {
  const { config, upstream, now = Date.now, log = silentLogger, clientIp = () => undefined, metrics = noopMetrics } = deps;
  const requestTimedOut = deps.requestTimedOut ?? (() => false);
  // The service's own origin counts only where it serves pages posting to itself (demo mode).
  const origins = createOriginPolicy(config.allowedOrigins, deps.site ? listenOrigins(config.host, config.port) : []);
  const cacheControl = publicCacheControl(config.cacheTtlSeconds, STALE_WHILE_REVALIDATE_SECONDS, STALE_IF_ERROR_SECONDS);
  // A failing upstream is logged once per spell, not once per read it affects.
  const spells = createFailureSpells({ log, now });
  const reads = createPublicReads({
    upstream,
    now,
    ttlSeconds: config.cacheTtlSeconds,
    maxBytes: config.cacheMaxBytes,
    notFoundTtlSeconds: config.notFoundTtlSeconds,
    archiveMaxIssues: config.archiveMaxIssues,
    archiveResyncSeconds: config.archiveResyncSeconds,
    readBudget: createReadBudget({
      totalPerMinute: config.readBudgetPerMinute,
      perClientPerMinute: config.readBudgetPerClientPerMinute,
      now,
      // One line when a bucket runs dry, not one per refused read.
      onExhausted: (scope) => log.log('warn', 'read_budget_exhausted', { scope }),
    }),
    indexRefreshMinIntervalMs: config.indexRefreshMinSeconds * 1000,
    // A read refused by the budget made no upstream call: read_budget_exhausted said so once.
    onLoadError: (key, error) => {
      if (!(error instanceof ReadBudgetExceeded)) spells.loadFailed(key, error);
    },
    spells,
    onTooLarge: (key, bytes, maxEntryBytes) =>
      log.log('warn', 'cache_entry_too_large', {
        key,
        bytes,
        maxEntryBytes,
        hint: 'served but not cached, so every request reads it from the upstream again: raise CACHE_MAX_BYTES or lower ARCHIVE_MAX_ISSUES',
      }),
    sharedCache: deps.sharedCache,
    encodeBody: deps.encodeBody,
    metrics,
  });

  const archiveQueries = createArchiveQueries(config.archiveMaxIssues);
  const headerRules = createHeaderRules({
    allowedOrigins: config.allowedOrigins,
    origins,
    siteSecurityHeaders: deps.site ? siteSecurityHeaders(config.turnstileSiteKey !== undefined) : undefined,
    // The demo's thumbnails are what its archive's `thumbnailUrl`s point at: a site on
    // another origin (one built with `npm run site:build`) must be able to show them.
    siteEmbeddablePaths: ['/thumbnails/'],
  });
  const logAccess = createAccessLog(log, metrics, { routes: Object.keys(PUBLIC_PATHS), mode: config.accessLog, now });

  const surge =
    config.subscribeSurgePerMinute === 0
      ? undefined
      : createSurgeWatch({
          perMinute: config.subscribeSurgePerMinute,
          holdSeconds: config.subscribeSurgeSeconds,
          response: config.turnstileSecretKey ? 'challenge' : 'pause',
          counter: deps.surgeCounter ?? createMemorySurgeCounter(),
          now,
          log,
          metrics,
          alert: config.alertWebhookUrl ? createAlertWebhook({ url: config.alertWebhookUrl, log, ...deps.alertWebhook }) : undefined,
        });

  // The archive is watched without visitors only for a build hook to tell (the entry runs its ticks).
  const watchDeps = deps.archiveWatch ?? {};
  const archiveWatch =
    config.deployHookUrl === undefined
      ? undefined
      : createArchiveWatch({
          readIndex: (watching) => reads.freshArchiveIndex({ load: watchDeps.loadIndex ?? true, upstream: watching }),
          callHook: createDeployHook({ url: config.deployHookUrl, fetch: watchDeps.fetch, timeoutMs: watchDeps.timeoutMs }),
          hookLabel: describeHookUrl(config.deployHookUrl),
          store: watchDeps.store,
          reloadEachTick: watchDeps.reloadEachTick,
          lease: watchDeps.lease,
          settleMs: watchDeps.settleMs,
          now,
          log,
        });

  // Feeds are a representation of the archive route, on only when issues have a page to link to.
  const feeds =
    config.siteIssueUrl === undefined
      ? undefined
      : createArchiveFeeds({
          reads,
          siteIssueUrl: config.siteIssueUrl,
          publicationName: config.publicationName,
          publicBaseUrl: config.publicBaseUrl,
          maxBytes: splitMemoryBudget(config.cacheMaxBytes).renderedFeeds,
          encodeBody: deps.encodeBody,
        });

  const api = new Hono()
    .route('/', createIssuesRoutes({ reads, cacheControl, archiveQueries, feeds, clientIp }))
    .route('/', createCategoriesRoutes({ reads, cacheControl, clientIp }))
    .route(
      '/',
      createSubscribeRoutes({
        upstream,
        config,
        origins,
        rateLimiter: deps.rateLimiter ?? createMemoryRateLimiter({ limit: config.subscribeRateLimitPerMinute, windowMs: 60_000, now }),
        clientIp,
        ...(deps.repeatGuard ? { repeatGuard: deps.repeatGuard } : {}),
        now,
        log,
        challenge: config.turnstileSecretKey
          ? createTurnstileChallenge({
              secretKey: config.turnstileSecretKey,
              siteKey: config.turnstileSiteKey,
              verifyUrl: config.turnstileVerifyUrl,
              clientIp,
              ...deps.turnstile,
            })
          : undefined,
        surge,
        isDisposableDomain: deps.isDisposableDomain,
        metrics,
        requestTimedOut,
      }),
    );

  // Preflights only: the requests themselves get their grant from createResponseHeaders.
  const preflight = cors({
    ...CORS_POLICY,
    origin: config.allowedOrigins === '*' ? '*' : (origin) => corsGrant(origins, origin)?.['Access-Control-Allow-Origin'] ?? null,
  });

  const app = new Hono();
  app.use(createResponseHeaders(headerRules), accessLogMiddleware(logAccess));
  for (const path of Object.keys(PUBLIC_PATHS)) app.on('OPTIONS', path, preflight);
  const routes = app.route('/api', api);
  for (const [path, allow] of Object.entries(PUBLIC_PATHS)) {
    app.all(path, () => {
      throw new ApiError('METHOD_NOT_ALLOWED', { allow });
    });
  }
  if (deps.site) {
    const site = deps.site;
    app.on(['GET', 'HEAD'], '*', (c, next) => (c.req.path.startsWith('/api/') ? next() : site(c, next)));
  }

  app.notFound((c) => renderError(c, new ApiError('NOT_FOUND')));
  app.onError((error, c) => {
    // The client hung up before its body arrived (499), or the listener timed it out (408):
    // nothing to answer and nothing of ours broke; logged once by the access log at info.
    const cutOff = cutOffStatus(c, requestTimedOut);
    if (cutOff !== undefined) return new Response(null, { status: cutOff });
    if (error instanceof ApiError) return renderError(c, error);
    // Logged once where the cache loaded it (onLoadError), not again for every waiting request.
    if (error instanceof UpstreamError) return renderError(c, readErrorFromUpstream(error));
    log.log('error', 'unhandled_error', {
      requestId: c.get('requestId'),
      name: error instanceof Error ? error.name : typeof error,
      message: error instanceof Error ? error.message : undefined,
    });
    return renderError(c, new ApiError('INTERNAL_ERROR'));
  });

  // A request @hono/node-server cannot make a Request of (a Host or path it refuses) never
  // reaches the routes; the Node listener hands a stand-in here, so its answer has the headers,
  // access line and envelope of every other one (docs/node-http.md "Every answer in the envelope").
  const refusals = new Hono();
  refusals.use(createResponseHeaders(headerRules), accessLogMiddleware(logAccess));
  refusals.all('*', () => {
    throw new ApiError('BAD_REQUEST');
  });
  refusals.onError((error, c) => renderError(c, error instanceof ApiError ? error : new ApiError('INTERNAL_ERROR')));

  return {
    app: routes,
    /** Answers 400 `BAD_REQUEST` to a stand-in for a request the Node adapter could not read. */
    refuse: (request: Request) => refusals.fetch(request),
    stats: () => ({ ...reads.stats(), ...feeds?.stats() }),
    /** Node's fresh-read path (node/hot-path.ts): the same reads and rules, without the pipeline. */
    freshReply: createFreshReplies({ reads, archiveQueries, headerRules, cacheControl }),
    logAccess,
    /** The Workers Cron Trigger's refresh (workers/handler.ts `scheduled`). */
    refreshFromUpstream: reads.refreshFromUpstream,
    /** Surge detection, for the Node entry's timer that ends a surge when the flood stops. */
    surge,
    /** DEPLOY_HOOK_URL's watch, for the entry's ticks (Node: a timer; Workers: the Cron Trigger); none without it. */
    archiveWatch,
  };
}

/** The route types, for `hono/client`'s `hc<AppType>()`. */
export type AppType = ReturnType<typeof createApp>['app'];
