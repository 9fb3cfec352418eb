import { Hono, type Context, type MiddlewareHandler } from 'hono';
import { cors } from 'hono/cors';
import { TrieRouter } from 'hono/router/trie-router';
import type { Config } from './config/config.js';
import { createArchiveFeeds } from './reads/archive-feeds.js';
import { cacheControlOf, cachePolicies } from './reads/cache-policies.js';
import { splitMemoryBudget } from './reads/memory-budget.js';
import { createPublicReads } from './reads/public-reads.js';
import { createReadBudget, ReadBudgetExceeded } from './reads/read-budget.js';
import type { BodyEncoder } from './reads/rendered-json.js';
import type { SharedTier } from './reads/shared-tier.js';
import { createAccessLog } from './http/access-log.js';
import { ApiError, cutOffStatus, renderError } from './http/errors.js';
import { createOriginPolicy, listenOrigins } from './http/origins.js';
import { createPipeline } from './http/pipeline.js';
import { headerOfRequest, type RequestHeader } from './http/request-header.js';
import type { RateLimiter } from './http/rate-limit.js';
import { CORS_POLICY, DOCUMENT_SECURITY_HEADERS, corsGrant, createHeaderRules } from './http/response-headers.js';
import { silentLogger, type Logger } from './log.js';
import { noopMetrics, type Metrics } from './metrics.js';
import { createArchiveQueries } from './routes/archive-query.js';
import { createReadRoutes } from './routes/reads.js';
import { createSubscribeRoutes } from './routes/subscribe.js';
import type { RepeatGuard, TurnstileChallengeOptions } from './subscribe/guards.js';
import type { SurgeCounter } from './subscribe/surge.js';
import { createFailureSpells, readErrorFromUpstream } from './upstream/failure-policy.js';
import type { UpstreamClient } from './upstream/newsletter-api.js';
import { UpstreamError } from './upstream/transport.js';
import { createArchiveWatch, type ArchiveWatchOptions } from './watch/archive-watch.js';
import { createDeployHook, describeHookUrl } from './watch/deploy-hook.js';

export interface AppDeps {
  config: Config;
  upstream: UpstreamClient;
  now?: () => number;
  log?: Logger;
  /** The visitor's IP: the socket (and trusted proxies) on Node, `CF-Connecting-IP` on Workers. */
  clientIp?: (c: Context) => string | undefined;
  requestHeader?: RequestHeader;
  rateLimiter?: RateLimiter;
  /** Answers GET/HEAD of every path outside /api/ (demo mode's example site). */
  site?: MiddlewareHandler;
  /** A cache tier shared between isolates (Workers' Cache API) or instances (Redis on Node). */
  sharedCache?: SharedTier;
  turnstile?: Pick<TurnstileChallengeOptions, 'fetch' | 'timeoutMs'>;
  /** Addresses forwarded lately, shared between instances (Redis); per process by default. */
  repeatGuard?: RepeatGuard;
  surgeCounter?: SurgeCounter;
  isDisposableDomain?: (domain: string) => boolean;
  /** DEPLOY_HOOK_URL's watch: its state and lease; `loadIndex: false` looks only at a fresh copy (the Cron Trigger refreshed it). */
  archiveWatch?: Partial<Pick<ArchiveWatchOptions, 'store' | 'reloadEachTick' | 'lease' | 'settleMs'>> & {
    loadIndex?: boolean;
    fetch?: typeof globalThis.fetch;
  };
  metrics?: Metrics;
  /** Compresses each cached JSON copy once (Node); none on Workers, whose edge compresses. */
  encodeBody?: BodyEncoder;
  /** Whether the listener's REQUEST_TIMEOUT_SECONDS cut this request off (logged 408, not 499); Node only. */
  requestTimedOut?: (c: Context) => boolean;
}

/** The four public paths and the methods each answers (OPTIONS is the preflight). */
const PUBLIC_PATHS = {
  '/api/issues': ['GET', 'HEAD', 'OPTIONS'],
  '/api/issues/:slug': ['GET', 'HEAD', 'OPTIONS'],
  '/api/categories': ['GET', 'HEAD', 'OPTIONS'],
  '/api/subscribe': ['POST', 'OPTIONS'],
} as const;

/** The example site's pages (demo mode): issue images from any https host, issue HTML in a sandboxed iframe, Turnstile when on. */
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

/** The whole service from its dependencies: the four routes, one pipeline and one error path. No globals. */
export function createApp(deps: AppDeps) {
  const { config, upstream, now = Date.now, log = silentLogger, clientIp = () => undefined, metrics = noopMetrics } = deps;
  const { requestHeader = headerOfRequest, requestTimedOut = () => false, site } = deps;
  // The service's own origin counts only where it serves pages posting to itself (demo mode).
  const origins = createOriginPolicy(config.allowedOrigins, site ? listenOrigins(config.host, config.port) : []);
  const policies = cachePolicies(config);
  // A failing upstream is logged once per spell, not once per read it affects.
  const spells = createFailureSpells({ log, now });
  const reads = createPublicReads({
    upstream,
    now,
    policies,
    maxBytes: config.cacheMaxBytes,
    notFoundTtlSeconds: config.notFoundTtlSeconds,
    archiveMaxIssues: config.archiveMaxIssues,
    archiveResyncSeconds: config.archiveResyncSeconds,
    readBudget: createReadBudget({
      totalPerMinute: config.readBudgetPerMinute,
      perClientPerMinute: config.readBudgetPerClientPerMinute,
      now,
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

  const headerRules = createHeaderRules({
    allowedOrigins: config.allowedOrigins,
    origins,
    siteSecurityHeaders: site ? siteSecurityHeaders(config.turnstileSiteKey !== undefined) : undefined,
    // The demo's thumbnails are what its archive's `thumbnailUrl`s point at, for sites on other origins too.
    siteEmbeddablePaths: ['/thumbnails/'],
  });
  const logAccess = createAccessLog(log, metrics, { routes: Object.keys(PUBLIC_PATHS), mode: config.accessLog, now });

  // The archive is watched without visitors only for a build hook to tell (the entry runs its ticks).
  const { loadIndex = true, fetch: hookFetch, ...watch } = deps.archiveWatch ?? {};
  const archiveWatch =
    config.deployHookUrl === undefined
      ? undefined
      : createArchiveWatch({
          readIndex: (watching) => reads.freshArchiveIndex({ load: loadIndex, upstream: watching }),
          callHook: createDeployHook({ url: config.deployHookUrl, fetch: hookFetch }),
          hookLabel: describeHookUrl(config.deployHookUrl),
          ...watch,
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

  function answerError(error: unknown, c: Context): Response {
    // The client hung up before its body arrived (499), or the listener timed it out (408): nothing to answer.
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
  }
  const pipeline = createPipeline({ headerRules, logAccess, answerError, requestHeader });
  const subscribe = createSubscribeRoutes({ ...deps, first: pipeline.layer, origins, clientIp, now, log, metrics, requestTimedOut });

  const api = new Hono()
    .route(
      '/',
      createReadRoutes({
        reads,
        headerRules,
        clientIp,
        requestHeader,
        pipeline,
        cacheControl: {
          archive: cacheControlOf(policies.archive),
          issue: cacheControlOf(policies.issue),
          categories: cacheControlOf(policies.categories),
        },
        archiveQueries: createArchiveQueries(config.archiveMaxIssues),
        feeds,
      }),
    )
    .route('/', subscribe.routes);

  // Preflights only: the requests themselves get their grant from the header rules.
  const preflight = cors({
    ...CORS_POLICY,
    origin: config.allowedOrigins === '*' ? '*' : (origin) => corsGrant(origins, origin)?.['Access-Control-Allow-Origin'] ?? null,
  });
  const answerPreflight = pipeline.route(async (c: Context) => (await preflight(c, async () => {})) as Response);

  // Which methods each public path answers, for a request no route took (405 with Allow).
  const publicPaths = new TrieRouter<{ path: string; allow: readonly string[] }>();
  for (const [path, allow] of Object.entries(PUBLIC_PATHS)) publicPaths.add('ALL', path, { path, allow });
  const publicPathOf = (c: Context) => publicPaths.match(c.req.method, c.req.path)[0][0]?.[0];

  /** A request no route took: a method a public path does not answer, a page of the demo site, or nothing. */
  async function noRoute(c: Context): Promise<Response> {
    const allow = publicPathOf(c)?.allow;
    if (allow) throw new ApiError('METHOD_NOT_ALLOWED', { allow });
    if (site && (c.req.method === 'GET' || c.req.method === 'HEAD') && !c.req.path.startsWith('/api/')) {
      const page = await site(c, async () => {});
      if (page instanceof Response) return page;
    }
    throw new ApiError('NOT_FOUND');
  }

  // Each handler is wrapped in the pipeline (core/http/pipeline.ts) rather than preceded by middleware.
  const app = new Hono();
  for (const path of Object.keys(PUBLIC_PATHS)) app.on('OPTIONS', path, answerPreflight);
  const routes = app.route('/api', api);
  app.notFound(pipeline.unrouted(noRoute, (c) => publicPathOf(c)?.path));
  app.onError(answerError);

  // A request @hono/node-server cannot make a Request of (a Host or path it refuses) is handed here as a
  // plain stand-in Request, so its 400 has the headers and access line of every other answer (docs/node-http.md).
  const refusing = createPipeline({ headerRules, logAccess, answerError, requestHeader: headerOfRequest });
  const badRequest = () => {
    throw new ApiError('BAD_REQUEST');
  };
  const refuseAll = refusing.unrouted(badRequest, () => undefined);
  const refusals = new Hono().all('*', refuseAll);

  // The entries run the timers: the surge's end, the watch's ticks, the Cron Trigger's refresh.
  return {
    app: routes,
    refuse: (request: Request) => refusals.fetch(request),
    stats: () => ({ ...reads.stats(), ...feeds?.stats() }),
    logAccess,
    refreshFromUpstream: reads.refreshFromUpstream,
    surge: subscribe.surge,
    archiveWatch,
  };
}

/** The route types, for `hono/client`'s `hc<AppType>()`. */
export type AppType = ReturnType<typeof createApp>['app'];
