import { spawnSync } from 'node:child_process';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createAdmin } from '../../src/node/admin/admin.js';
import { startFakeUpstreamServer } from '../support/fake-upstream/server.js';
import { silentLogger } from '../../src/core/log.js';
import { createAppForConfig } from '../../src/core/app.js';
import { serveWithLimits, type ServerLimits } from '../../src/node/listener.js';
import { createFakeClock, TEST_API_KEY, testConfig } from '../helpers.js';

function listening(server: Server): Promise<number> {
  return new Promise((resolve, reject) => {
    if (server.listening) return resolve((server.address() as AddressInfo).port);
    server.once('error', reject);
    server.once('listening', () => resolve((server.address() as AddressInfo).port));
  });
}

/**
 * The service as the Node entry runs it with ADMIN_PORT set, on loopback sockets: the fake
 * upstream (test/support/fake-upstream/) on one port, the public app on another, the admin routes on a
 * third. The clock drives readiness and the caches; sockets and the upstream are real.
 */
export async function startServiceWithAdmin({
  unreadyAfterSeconds = 60,
  shedding,
  limits = {},
}: {
  unreadyAfterSeconds?: number;
  /** Replaces the listener's own report (default: the real listener's). */
  shedding?: () => boolean;
  /** The public listener's limits over roomy defaults. */
  limits?: Partial<ServerLimits>;
} = {}) {
  const clock = createFakeClock();
  const upstream = await startFakeUpstreamServer({ apiKey: TEST_API_KEY });
  const config = testConfig({ NEWSLETTER_API_BASE_URL: upstream.baseUrl });
  const admin = createAdmin({ unreadyAfterSeconds, now: clock.now });
  const service = createAppForConfig(config, { log: silentLogger, clientIp: () => '127.0.0.1', now: clock.now, metrics: admin.metrics });
  const limited = serveWithLimits(
    {
      fetch: service.app.fetch,
      refuse: service.refuse,
      hostname: '127.0.0.1',
      port: 0,
      onShed: (reason) => admin.metrics.connectionShed(reason),
    },
    { maxConnections: 1024, headersTimeoutMs: 10_000, requestTimeoutMs: 30_000, clientKeyOf: (address) => address, ...limits },
  );
  const publicServer = limited.server;
  const publicPort = await listening(publicServer);
  const adminServer = admin.listen({
    host: '127.0.0.1',
    port: 0,
    publicServer,
    shedding: shedding ?? limited.shedding,
    stats: service.stats,
    probe: () => service.upstream.listCategories(),
    onListening: () => undefined,
  }) as Server;
  const adminPort = await listening(adminServer);
  const publicUrl = `http://127.0.0.1:${publicPort}`;
  const adminUrl = `http://127.0.0.1:${adminPort}`;
  return {
    clock,
    upstream,
    admin,
    publicUrl,
    adminUrl,
    get: (path: string, init?: RequestInit) => fetch(`${publicUrl}${path}`, init),
    adminGet: (path: string) => fetch(`${adminUrl}${path}`),
    scrape: async () => (await fetch(`${adminUrl}/metrics`)).text(),
    async stop() {
      for (const server of [publicServer, adminServer]) {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
      await upstream.stop();
    },
  };
}

/** The value of one sample (`name{labels}` exactly as exposed) in a scrape; 0 when absent. */
export function sampleOf(scrape: string, series: string): number {
  const line = scrape.split('\n').find((row) => row.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

/** `promtool check metrics` on a scrape: its exit status and output, or undefined when promtool is not installed. */
export function promtoolCheck(scrape: string): { status: number | null; output: string } | undefined {
  const run = spawnSync('promtool', ['check', 'metrics'], { input: scrape, encoding: 'utf8' });
  if (run.error && (run.error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}
