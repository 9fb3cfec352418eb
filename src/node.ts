import type { HttpBindings } from '@hono/node-server';
import { getConnInfo } from '@hono/node-server/conninfo';
import { parseConfig, secretsOf } from './core/config/config.js';
import { createNodeClientIp } from './core/http/ip-address.js';
import { headerOfIncoming } from './core/http/read-reply.js';
import { createBufferedWriter, createLogger } from './core/log.js';
import { cachePolicies, sharedTierMaxAgeSeconds } from './core/reads/cache-policies.js';
import { createAppForConfig, linkOriginOf } from './core/app.js';
import { createDemoSite } from './demo/site.js';
import type { Admin } from './node/admin/admin.js';
import { createNodeBodyEncoder } from './node/compression.js';
import { limitsOf, serveWithLimits, timedOutByListener, urlOf } from './node/listener.js';
import { importOptional, MissingPackageError } from './node/optional-package.js';
import type { RedisServices } from './node/redis/services.js';

const SURGE_CHECK_INTERVAL_MS = 5000;
const HIT_SUMMARY_INTERVAL_MS = 60_000;
/** A tick reads the upstream only once the archive's copy is past its TTL. */
const WATCH_TICK_MS = 1000;
const ADMIN_FEATURE = "ADMIN_PORT (the admin listener's /metrics)";
const REDIS_FEATURE = 'REDIS_URL (state shared by several instances)';

const DEMO_BANNER =
  'DEMO MODE: a sample publication, nothing sent to a newsletter service; set NEWSLETTER_API_KEY and NEWSLETTER_API_BASE_URL for yours.\n';

export async function startNode(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const parsed = parseConfig(env);
  if (!parsed.ok) {
    for (const problem of parsed.problems) process.stderr.write(`config error: ${problem}\n`);
    process.stderr.write('newsletter-bff did not start. See README.md "Configuration".\n');
    process.exitCode = 2;
    return;
  }
  const { config } = parsed;
  const writer = createBufferedWriter((chunk) => process.stdout.write(chunk));
  const log = createLogger({ write: writer.write, redact: secretsOf(env) });
  let admin: Admin | undefined;
  let redis: RedisServices | undefined;
  let isDisposableDomain: ((domain: string) => boolean) | undefined;
  try {
    if (config.adminPort !== undefined) {
      const { createAdmin } = await importOptional('prom-client', ADMIN_FEATURE, () => import('./node/admin/admin.js'));
      admin = createAdmin({ unreadyAfterSeconds: config.adminUnreadyAfterSeconds });
    }
    if (config.redisUrl) {
      const { connectRedis } = await importOptional('@redis/client', REDIS_FEATURE, () => import('./node/redis/services.js'));
      redis = await connectRedis({
        url: config.redisUrl,
        timeoutMs: config.redisTimeoutMs,
        namespace: config.mode === 'demo' ? 'demo' : (config.apiBaseUrl ?? ''),
        apiKey: config.apiKey ?? 'demo',
        subscribeLimitPerMinute: config.subscribeRateLimitPerMinute,
        cacheMaxAgeSeconds: sharedTierMaxAgeSeconds(cachePolicies(config)),
        log,
      });
    }
    if (config.subscribeBlockDisposable) {
      const { loadDisposableDomains } = await import('./core/subscribe/disposable-domains.js');
      isDisposableDomain = await loadDisposableDomains();
    }
  } catch (error) {
    if (!(error instanceof MissingPackageError)) throw error;
    process.stderr.write(`newsletter-bff did not start: ${error.message}\n`);
    void redis?.close();
    writer.stop();
    process.exitCode = 1;
    return;
  }
  for (const notice of parsed.notices) log.log('warn', 'config_notice', { notice });

  // The demo site's own reads get the visitor's socket and none of the page's headers.
  const api = async (path: string, env: unknown) =>
    service.app.request(path, undefined, { ...(env as object), incoming: { headers: {}, socket: (env as HttpBindings).incoming.socket } });
  const service = createAppForConfig(config, {
    metrics: admin?.metrics,
    encodeBody: createNodeBodyEncoder(),
    log,
    rateLimiter: redis?.rateLimiter,
    repeatGuard: redis?.repeatGuard,
    surgeCounter: redis?.surgeCounter,
    sharedCache: redis?.sharedCache,
    holdOff: redis?.holdOff,
    // With TURNSTILE_MODE=surge the form shows no widget until CAPTCHA_REQUIRED brings the key.
    site:
      config.mode === 'demo' ? createDemoSite(config.turnstileMode === 'always' ? config.turnstileSiteKey : undefined, { api }) : undefined,
    demoOrigin: linkOriginOf(config.host, config.port),
    clientIp: createNodeClientIp(config.trustProxyHops, (c) => getConnInfo(c).remote.address, config.trustedProxies),
    requestTimedOut: timedOutByListener,
    requestHeader: headerOfIncoming,
    isDisposableDomain,
    // One instance watches; the hook waits a TTL and a tick for the others' copies to come from Redis.
    archiveWatch: redis && {
      store: redis.watchStore,
      lease: redis.watchLease,
      settleMs: config.cacheTtlSeconds * 1000 + 2 * WATCH_TICK_MS,
    },
  });
  const { surge, logAccess, archiveWatch, stats } = service;
  // A surge ends after SUBSCRIBE_SURGE_SECONDS of low rate, also when no attempt comes to notice it.
  if (surge) setInterval(() => void surge.check((promise) => void promise), SURGE_CHECK_INTERVAL_MS).unref();
  if (config.accessLog === 'summary') setInterval(() => logAccess.writeHitSummary(), HIT_SUMMARY_INTERVAL_MS).unref();
  if (archiveWatch) {
    void archiveWatch.tick();
    setInterval(() => void archiveWatch.tick(), WATCH_TICK_MS).unref();
  }
  const exit = (code: number) => {
    logAccess.writeHitSummary();
    writer.stop();
    process.exit(code);
  };
  const failedToListen = (where: string) => (error: NodeJS.ErrnoException) => {
    const why = error.code === 'EADDRINUSE' ? 'the port is already in use' : (error.code ?? error.message);
    process.stderr.write(`newsletter-bff could not listen on ${where}: ${why}\n`);
    exit(1);
  };

  const { server, shedding } = serveWithLimits(
    { fetch: service.app.fetch, refuse: service.refuse, hostname: config.host, port: config.port, onShed: admin?.metrics.connectionShed },
    limitsOf(config),
    (info) => {
      if (config.mode === 'demo') process.stdout.write(DEMO_BANNER);
      process.stdout.write(`newsletter-bff listening on ${urlOf(info)} (${config.mode} mode)\n`);
    },
  );
  server.on('error', failedToListen(`${config.host} port ${config.port}`));

  if (admin && config.adminPort !== undefined) {
    const adminServer = admin.listen({
      host: config.adminHost,
      port: config.adminPort,
      publicServer: server,
      shedding,
      stats,
      probe: () => service.upstream.listCategories(),
      redisHealthy: redis?.healthy,
      onListening: (url) => process.stdout.write(`newsletter-bff admin (/healthz, /readyz, /metrics) on ${url}\n`),
    });
    adminServer.on('error', failedToListen(`${config.adminHost} port ${config.adminPort} (ADMIN_PORT)`));
  }

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.log('info', 'shutting_down', { signal });
    admin?.drain();
    server.close(() => {
      log.log('info', 'cache_stats', { ...stats() });
      void redis?.close();
      exit(0);
    });
    server.closeIdleConnections();
    // A kept-alive connection whose response finishes now would idle until its timeout.
    setInterval(() => server.closeIdleConnections(), 50).unref();
    setTimeout(() => exit(0), 10_000).unref();
  };
  for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => shutdown(signal));
}
