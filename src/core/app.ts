import { Hono, type Context, type MiddlewareHandler } from 'hono';
import { cors } from 'hono/cors';
import { TrieRouter } from 'hono/router/trie-router';
import { DEFAULT_DEMO_ORIGIN, DEMO_PUBLICATION_NAME } from '../demo/sample-publication.js';
import type { Config } from './config/config.js';
import { createArchiveFeeds } from './reads/archive-feeds.js';
import { cachePolicies, splitMemoryBudget } from './reads/cache-policies.js';
import { createPublicReads, type PublicReadsOptions } from './reads/public-reads.js';
import { createReadBudget, ReadBudgetExceeded } from './reads/read-budget.js';
import { createAccessLog } from './http/access-log.js';
import { ApiError, cutOffStatus, renderError } from './http/errors.js';
import { createPipeline } from './http/pipeline.js';
import { headerOfRequest, type RequestHeader } from './http/read-reply.js';
import { CORS_POLICY, corsGrant, createHeaderRules } from './http/response-headers.js';
import { silentLogger } from './log.js';
import { noopMetrics } from './metrics.js';
import { createArchiveQueries } from './routes/archive-query.js';
import { createReadRoutes } from './routes/reads.js';
import { createSubscribeRoutes, type SubscribeDeps } from './routes/subscribe.js';
import { createFailureSpells, readErrorFromUpstream } from './upstream/failure-policy.js';
import { createUpstreamForConfig, type UpstreamForConfigDeps } from './upstream/newsletter-api.js';
import { UpstreamError } from './upstream/transport.js';
import { createArchiveWatch, createDeployHook, describeHookUrl, type ArchiveWatchOptions } from './watch/archive-watch.js';

type SubscribeOptions = Parameters<typeof createSubscribeRoutes>[0];

export interface AppDeps
  extends Pick<SubscribeOptions, 'config' | 'upstream' | keyof SubscribeDeps>,
    Partial<Pick<SubscribeOptions, 'now' | 'log' | 'clientIp' | 'metrics' | 'requestTimedOut'>>,
    Pick<PublicReadsOptions, 'sharedCache' | 'encodeBody'> {
  requestHeader?: RequestHeader;
  site?: MiddlewareHandler;
  /** The build hook's; createAppForConfig gives the upstream the same. */
  fetch?: typeof globalThis.fetch;
  /** `loadIndex: false` looks only at a fresh copy (the Cron Trigger refreshed it). */
  archiveWatch?: Partial<Pick<ArchiveWatchOptions, 'store' | 'reloadEachTick' | 'lease' | 'settleMs'>> & { loadIndex?: boolean };
}

const TOO_LARGE_HINT = 'not cached, so read upstream every time: raise CACHE_MAX_BYTES or lower ARCHIVE_MAX_ISSUES';

const PUBLIC_PATHS = {
  '/api/issues': ['GET', 'HEAD', 'OPTIONS'],
  '/api/issues/:slug': ['GET', 'HEAD', 'OPTIONS'],
  '/api/categories': ['GET', 'HEAD', 'OPTIONS'],
  '/api/subscribe': ['POST', 'OPTIONS'],
} as const;

export function createApp(deps: AppDeps) {
  const { config, upstream, now = Date.now, log = silentLogger, clientIp = () => undefined, metrics = noopMetrics } = deps;
  const { requestHeader = headerOfRequest, requestTimedOut = () => false, site } = deps;
  const headerRules = createHeaderRules(config, site !== undefined);
  const { origins } = headerRules;
  const policies = cachePolicies(config);
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
    // A read the budget refused made no upstream call: read_budget_exhausted said so once.
    onLoadError: (key, error) => {
      if (!(error instanceof ReadBudgetExceeded)) spells.loadFailed(key, error);
    },
    spells,
    onTooLarge: (key, bytes, maxEntryBytes) =>
      log.log('warn', 'cache_entry_too_large', { key, bytes, maxEntryBytes, hint: TOO_LARGE_HINT }),
    sharedCache: deps.sharedCache,
    encodeBody: deps.encodeBody,
    metrics,
  });
  const logAccess = createAccessLog(log, metrics, { routes: Object.keys(PUBLIC_PATHS), mode: config.accessLog, now });

  const { loadIndex = true, ...watch } = deps.archiveWatch ?? {};
  const archiveWatch =
    config.deployHookUrl === undefined
      ? undefined
      : createArchiveWatch({
          readIndex: (watching) => reads.freshArchiveIndex({ load: loadIndex, upstream: watching }),
          callHook: createDeployHook({ url: config.deployHookUrl, fetch: deps.fetch }),
          hookLabel: describeHookUrl(config.deployHookUrl),
          ...watch,
          now,
          log,
        });

  const { siteIssueUrl, publicationName, publicBaseUrl } = config;
  const feedsMaxBytes = splitMemoryBudget(config.cacheMaxBytes).renderedFeeds;
  const feeds =
    siteIssueUrl === undefined
      ? undefined
      : createArchiveFeeds({ reads, siteIssueUrl, publicationName, publicBaseUrl, maxBytes: feedsMaxBytes, encodeBody: deps.encodeBody });

  function answerError(error: unknown, c: Context): Response {
    const cutOff = cutOffStatus(c, requestTimedOut);
    if (cutOff !== undefined) return new Response(null, { status: cutOff });
    if (error instanceof ApiError) return renderError(c, error);
    // Logged once where the cache loaded it (onLoadError), not for every waiting request.
    if (error instanceof UpstreamError) return renderError(c, readErrorFromUpstream(error));
    const [name, message] = error instanceof Error ? [error.name, error.message] : [typeof error, undefined];
    log.log('error', 'unhandled_error', { requestId: c.get('requestId'), name, message });
    return renderError(c, new ApiError('INTERNAL_ERROR'));
  }
  const pipeline = createPipeline({ headerRules, logAccess, answerError, requestHeader });
  const subscribe = createSubscribeRoutes({ ...deps, first: pipeline.layer, origins, clientIp, now, log, metrics, requestTimedOut });
  const archiveQueries = createArchiveQueries(config.archiveMaxIssues);
  const readRoutes = createReadRoutes({ reads, headerRules, clientIp, requestHeader, pipeline, policies, archiveQueries, feeds });

  // Preflights only: the requests themselves get their grant from the header rules.
  const preflight = cors({
    ...CORS_POLICY,
    origin: config.allowedOrigins === '*' ? '*' : (origin) => corsGrant(origins, origin)?.['Access-Control-Allow-Origin'] ?? null,
  });
  const answerPreflight = pipeline.route(async (c: Context) => (await preflight(c, async () => {})) as Response);

  const publicPaths = new TrieRouter<{ path: string; allow: readonly string[] }>();
  for (const [path, allow] of Object.entries(PUBLIC_PATHS)) publicPaths.add('ALL', path, { path, allow });
  const publicPathOf = (c: Context) => publicPaths.match(c.req.method, c.req.path)[0][0]?.[0];
  async function noRoute(c: Context): Promise<Response> {
    const allow = publicPathOf(c)?.allow;
    if (allow) throw new ApiError('METHOD_NOT_ALLOWED', { allow });
    if (site && (c.req.method === 'GET' || c.req.method === 'HEAD') && !c.req.path.startsWith('/api/')) {
      const page = await site(c, async () => {});
      if (page instanceof Response) return page;
    }
    throw new ApiError('NOT_FOUND');
  }

  const app = new Hono();
  for (const path of Object.keys(PUBLIC_PATHS)) app.on('OPTIONS', path, answerPreflight);
  const routes = app.route('/api', new Hono().route('/', readRoutes).route('/', subscribe.routes));
  app.notFound(pipeline.route(noRoute, (c) => publicPathOf(c)?.path));
  app.onError(answerError);

  // A request @hono/node-server cannot make a Request of: its 400 gets every answer's headers (docs/node-http.md).
  const refusing = createPipeline({ headerRules, logAccess, answerError, requestHeader: headerOfRequest });
  const badRequest = () => Promise.reject(new ApiError('BAD_REQUEST'));
  const refusals = new Hono().use(refusing.route(badRequest, () => undefined));

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

export type AppType = ReturnType<typeof createApp>['app'];

export interface RuntimeDeps
  extends Omit<AppDeps, 'config' | 'upstream' | 'log' | 'clientIp'>,
    Required<Pick<AppDeps, 'log' | 'clientIp'>>,
    Pick<UpstreamForConfigDeps, 'holdOff'> {
  demoOrigin?: string;
}

export function linkOriginOf(host: string, port: number): string {
  const linkHost = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return `http://${linkHost.includes(':') ? `[${linkHost}]` : linkHost}:${port}`;
}

/** The upstream goes back too: the Node entry's readiness check calls it directly. */
export function createAppForConfig(given: Config, deps: RuntimeDeps) {
  const demoOrigin = deps.demoOrigin ?? DEFAULT_DEMO_ORIGIN;
  // Demo mode's feeds link to the example site it serves (as examples/site/archive.js does) unless told otherwise.
  const config: Config =
    given.mode === 'demo'
      ? {
          ...given,
          siteIssueUrl: given.siteIssueUrl ?? `${demoOrigin}/issue.html?slug={slug}`,
          publicationName: given.publicationName ?? DEMO_PUBLICATION_NAME,
          publicBaseUrl: given.publicBaseUrl ?? demoOrigin,
        }
      : given;
  const upstream = createUpstreamForConfig(config, { ...deps, demoOrigin });
  return { ...createApp({ ...deps, config, upstream }), upstream };
}
