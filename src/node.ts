import { getConnInfo } from '@hono/node-server/conninfo';
import { createServer } from 'node:http';
import { createAdmin } from './admin/admin.js';
import { createNodeClientIp } from './client-ip.js';
import { parseConfig } from './config.js';
import { createDemoSite } from './demo-site.js';
import { createBufferedWriter, createLogger } from './log.js';
import { createNodeBodyEncoder } from './node-compression.js';
import { createNodeHotPath } from './node-hot-path.js';
import { limitsOf, serveWithLimits } from './node-server-limits.js';
import type { Config } from './config.js';
import type { Logger } from './log.js';
import { STALE_IF_ERROR_SECONDS } from './reads/public-reads.js';
import type { RedisServices } from './redis/services.js';
import { createAppForConfig, linkOriginOf } from './service.js';

/**
 * Runs the service on Node (the CLI's `start`): config from `env`, demo or real upstream,
 * graceful shutdown. A bad config exits 2 (a usage error, as the CLI's), anything else 1.
 */
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
  const log = createLogger({ write: writer.write, redact: [config.apiKey, config.turnstileSecretKey] });
  const admin = config.adminPort === undefined ? undefined : createAdmin({ unreadyAfterSeconds: config.adminUnreadyAfterSeconds });
  const redis = config.redisUrl ? await startRedis(config, config.redisUrl, log) : undefined;
  const { app, stats, upstream, freshReply, logAccess } = createAppForConfig(config, {
    metrics: admin?.metrics,
    encodeBody: createNodeBodyEncoder(),
    log,
    ...(redis && {
      rateLimiter: redis.rateLimiter,
      repeatGuard: redis.repeatGuard,
      sharedCache: redis.sharedCache,
      holdOff: redis.holdOff,
    }),
    demoSite: config.mode === 'demo' ? createDemoSite(config.turnstileSiteKey) : undefined,
    demoOrigin: linkOriginOf(config.host, config.port),
    clientIp: createNodeClientIp(config.trustProxyHops, (c) => getConnInfo(c).remote.address),
  });

  // Fresh cached reads are answered in front of @hono/node-server's listener (node-hot-path.ts).
  const hotPath = createNodeHotPath({ freshReply, logAccess });
  const createHotServer = (options: object, listener: Parameters<typeof hotPath.inFrontOf>[0]) =>
    createServer(options, hotPath.inFrontOf(listener));
  const { server, atConnectionCap } = serveWithLimits(
    { fetch: app.fetch, hostname: config.host, port: config.port, createServer: createHotServer as typeof createServer },
    limitsOf(config),
    (info) => {
    const host = info.family === 'IPv6' ? `[${info.address}]` : info.address;
    if (config.mode === 'demo') {
      process.stdout.write(
        [
          '',
          '  DEMO MODE: no NEWSLETTER_API_KEY is set, so this serves an embedded sample publication.',
          '  Nothing is sent to a real newsletter service. Set NEWSLETTER_API_KEY and',
          '  NEWSLETTER_API_BASE_URL to serve your own newsletter.',
          '',
        ].join('\n') + '\n',
      );
    }
    process.stdout.write(`newsletter-bff listening on http://${host}:${info.port} (${config.mode} mode)\n`);
    },
  );

  // A port in use or a host that cannot be bound: one clear line, not an unhandled 'error' event.
  server.on('error', (error: NodeJS.ErrnoException) => {
    const reason = error.code === 'EADDRINUSE' ? 'the port is already in use' : (error.code ?? error.message);
    process.stderr.write(`newsletter-bff could not listen on ${config.host} port ${config.port}: ${reason}\n`);
    writer.stop();
    process.exit(1);
  });

  if (admin && config.adminPort !== undefined) {
    admin.listen({
      host: config.adminHost,
      port: config.adminPort,
      publicServer: server,
      atConnectionCap,
      stats,
      probe: () => upstream.listCategories(),
      ...(redis && { redisHealthy: redis.healthy }),
      onListening: (url) => process.stdout.write(`newsletter-bff admin (/healthz, /readyz, /metrics) on ${url}\n`),
      onFatal: (line) => {
        process.stderr.write(`${line}\n`);
        writer.stop();
        process.exit(1);
      },
    });
  }

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.log('info', 'shutting_down', { signal });
    admin?.drain();
    // Stop accepting, let in-flight requests finish, drop idle keep-alive sockets.
    server.close(() => {
      log.log('info', 'cache_stats', { ...stats() });
      void redis?.close();
      writer.stop();
      process.exit(0);
    });
    if ('closeIdleConnections' in server) {
      server.closeIdleConnections();
      // A keep-alive connection whose response finishes now would otherwise idle until its timeout.
      setInterval(() => server.closeIdleConnections(), 50).unref();
    }
    setTimeout(() => {
      writer.stop();
      process.exit(0);
    }, 10_000).unref();
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

/**
 * The shared state of several instances (README "Running several instances"). The client is
 * imported here, and only here, so that without REDIS_URL it is never loaded.
 */
async function startRedis(config: Config, url: string, log: Logger): Promise<RedisServices> {
  const { connectRedis } = await import('./redis/services.js');
  return connectRedis({
    url,
    timeoutMs: config.redisTimeoutMs,
    namespace: config.mode === 'demo' ? 'demo' : (config.apiBaseUrl ?? ''),
    apiKey: config.apiKey ?? 'demo',
    subscribeLimitPerMinute: config.subscribeRateLimitPerMinute,
    cacheMaxAgeSeconds: config.cacheTtlSeconds + STALE_IF_ERROR_SECONDS,
    log,
  });
}
