import { serve } from '@hono/node-server';
import type { Server } from 'node:net';
import type { Metrics } from '../../core/metrics.js';
import { createAdminApp } from './routes.js';
import { createPrometheusMetrics, type CacheFigures } from './prometheus.js';
import { createReadiness, upstreamOutcome } from './readiness.js';

export interface AdminOptions {
  /** ADMIN_UNREADY_AFTER_SECONDS. */
  unreadyAfterSeconds: number;
  now?: () => number;
  /** prom-client's process and runtime metrics (default true). */
  defaultMetrics?: boolean;
}

export interface ServiceView {
  stats: () => CacheFigures;
  /** One light upstream call for a not-ready /readyz. */
  probe: () => Promise<unknown>;
  /** A metric only: an instance serves from memory without Redis. */
  redisHealthy?: () => boolean;
  shedding?: () => boolean;
}

export interface ListenOptions extends ServiceView {
  host: string;
  port: number;
  /** The public listener, whose open connections are counted. */
  publicServer: Pick<Server, 'on'>;
  onListening: (url: string) => void;
  /** The line to print before exiting when the port cannot be bound. */
  onFatal: (line: string) => void;
}

/**
 * ADMIN_PORT: Prometheus `Metrics` for the app, readiness fed by the same upstream calls, and a
 * listener for /healthz, /readyz and /metrics. Created before the app, started after it.
 */
export function createAdmin(options: AdminOptions) {
  const prometheus = createPrometheusMetrics({ defaultMetrics: options.defaultMetrics });
  const readiness = createReadiness({ unreadyAfterMs: options.unreadyAfterSeconds * 1000, now: options.now });
  const metrics: Metrics = {
    ...prometheus.metrics,
    upstreamCall(operation, seconds, error) {
      prometheus.metrics.upstreamCall(operation, seconds, error);
      readiness.observe(upstreamOutcome(error));
    },
  };

  function app(service: ServiceView) {
    prometheus.watchCaches(service.stats);
    if (service.redisHealthy) prometheus.watchRedis(service.redisHealthy);
    const cacheWarm = () => service.stats().entries > 0;
    return createAdminApp({ registry: prometheus.registry, readiness, cacheWarm, shedding: service.shedding, probe: service.probe });
  }

  return {
    metrics,
    app,
    drain: () => readiness.drain(),
    listen(listen: ListenOptions) {
      prometheus.trackConnections(listen.publicServer);
      const server = serve({ fetch: app(listen).fetch, hostname: listen.host, port: listen.port }, (info) => {
        const host = info.family === 'IPv6' ? `[${info.address}]` : info.address;
        listen.onListening(`http://${host}:${info.port}`);
      });
      server.on('error', (error: NodeJS.ErrnoException) => {
        const reason = error.code === 'EADDRINUSE' ? 'the port is already in use' : (error.code ?? error.message);
        listen.onFatal(`newsletter-bff could not listen on ${listen.host} port ${listen.port} (ADMIN_PORT): ${reason}`);
      });
      return server;
    },
  };
}

export type Admin = ReturnType<typeof createAdmin>;
