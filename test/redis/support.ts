import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer, connect, type AddressInfo, type Server, type Socket } from 'node:net';
import { createApp } from '../../src/core/app.js';
import { createFakeUpstream, type FakeUpstream } from '../support/fake-upstream/fake.js';
import { createLogger } from '../../src/core/log.js';
import { createNodeBodyEncoder } from '../../src/node/compression.js';
import { cachePolicies, sharedTierMaxAgeSeconds } from '../../src/core/reads/cache-policies.js';
import { connectRedis, type RedisServices } from '../../src/node/redis/services.js';
import { createUpstreamClient } from '../../src/core/upstream/newsletter-api.js';
import { testConfig } from '../helpers.js';
import { freePort } from '../free-port.js';

/** Debian's package puts it here (`apt-get install redis-server`); CI installs it (.ci/run). */
const REDIS_SERVER = ['/usr/bin/redis-server', '/usr/local/bin/redis-server'].find((path) => existsSync(path));

/**
 * Whether the Redis suites can run. Missing in CI is a failure (a suite must not pass by not
 * running); missing locally skips them with a visible line.
 */
export function redisServerAvailable(): boolean {
  if (REDIS_SERVER) return true;
  if (process.env.CI) throw new Error('redis-server is not installed, and CI must run the Redis suites (see .ci/run)');
  process.stderr.write('SKIPPED: the Redis suites need redis-server (apt-get install redis-server)\n');
  return false;
}

/** A throwaway redis-server on a loopback port: no persistence, stopped and started at will. */
export async function startRedisServer(extraArgs: readonly string[] = []) {
  const port = await freePort();
  let child: ChildProcess | undefined;

  async function start(): Promise<void> {
    const started = spawn(
      REDIS_SERVER ?? 'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...extraArgs],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    child = started;
    await new Promise<void>((resolve, reject) => {
      let output = '';
      const timer = setTimeout(() => reject(new Error(`redis-server did not start within 5 s: ${output}`)), 5000);
      started.stdout?.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes('Ready to accept connections')) {
          clearTimeout(timer);
          resolve();
        }
      });
      started.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`redis-server exited (${code}): ${output}`));
      });
    });
  }

  async function stop(): Promise<void> {
    const running = child;
    child = undefined;
    if (!running || running.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      running.once('exit', () => resolve());
      running.kill('SIGKILL');
    });
  }

  await start();
  return { port, url: `redis://127.0.0.1:${port}`, start, stop };
}

export type RedisServer = Awaited<ReturnType<typeof startRedisServer>>;

/** A loopback TCP proxy in front of Redis that can hold every answer back by `delayMs`. */
export async function startDelayProxy(targetPort: number) {
  let delayMs = 0;
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(targetPort, '127.0.0.1');
    sockets.add(client).add(upstream);
    client.pipe(upstream);
    upstream.on('data', (chunk: Buffer) => {
      if (delayMs === 0) client.write(chunk);
      else setTimeout(() => client.writable && client.write(chunk), delayMs);
    });
    const close = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', close).on('close', close);
    upstream.on('error', close).on('close', close);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `redis://127.0.0.1:${port}`,
    setDelay(ms: number): void {
      delayMs = ms;
    },
    async stop(): Promise<void> {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export const REDIS_TEST_KEY = 'redis-suite-key-4b1d-not-real';
/** The fault suites' timeout, the default's. */
export const REDIS_TIMEOUT_MS = 100;
/**
 * The sharing suites test what is shared, not timeouts: a long one keeps a loaded machine
 * (another process holding the CPU for 100 ms) from turning a slow answer into an outage.
 */
export const PATIENT_TIMEOUT_MS = 2000;

/** One app instance, as the Node entry builds it with REDIS_URL set, over the fake upstream. */
export async function startInstance(
  fake: FakeUpstream,
  redisUrl: string,
  options: {
    timeoutMs?: number;
    recoveredAfterMs?: number;
    now?: () => number;
    env?: Record<string, string>;
    /** Cached bodies kept compressed too, as the Node entry keeps them (off where timings are the point). */
    compress?: boolean;
    /** The archive watcher's lease (with DEPLOY_HOOK_URL in `env`): short, so a hand-over is seen within a test. */
    watchLeaseMs?: number;
  } = {},
) {
  const lines: Record<string, unknown>[] = [];
  const log = createLogger({ write: (line) => lines.push(JSON.parse(line) as Record<string, unknown>), redact: [REDIS_TEST_KEY] });
  const config = testConfig({
    NEWSLETTER_API_KEY: REDIS_TEST_KEY,
    NEWSLETTER_API_BASE_URL: fake.baseUrl,
    REDIS_URL: redisUrl,
    ...options.env,
  });
  const redis: RedisServices = await connectRedis({
    url: redisUrl,
    timeoutMs: options.timeoutMs ?? REDIS_TIMEOUT_MS,
    namespace: fake.baseUrl,
    apiKey: REDIS_TEST_KEY,
    subscribeLimitPerMinute: config.subscribeRateLimitPerMinute,
    cacheMaxAgeSeconds: sharedTierMaxAgeSeconds(cachePolicies(config)),
    log,
    probeIntervalMs: 50,
    recoveredAfterMs: options.recoveredAfterMs ?? 300,
    ...(options.watchLeaseMs !== undefined && { watchLeaseMs: options.watchLeaseMs }),
  });
  const upstream = createUpstreamClient({
    baseUrl: fake.baseUrl,
    apiKey: REDIS_TEST_KEY,
    timeoutMs: config.upstreamTimeoutMs,
    fetch: fake.fetch,
    holdOff: redis.holdOff,
    ...(options.now && { now: options.now }),
  });
  const { app, archiveWatch } = createApp({
    config,
    upstream,
    ...(options.now && { now: options.now }),
    log,
    // As the Node entry runs the watch with REDIS_URL (src/node.ts).
    archiveWatch: { store: redis.watchStore, lease: redis.watchLease, settleMs: config.cacheTtlSeconds * 1000 + 2000 },
    clientIp: (c) => c.req.header('x-test-client-ip'),
    rateLimiter: redis.rateLimiter,
    repeatGuard: redis.repeatGuard,
    surgeCounter: redis.surgeCounter,
    sharedCache: redis.sharedCache,
    ...(options.compress && { encodeBody: createNodeBodyEncoder() }),
  });
  return {
    redis,
    lines,
    /** DEPLOY_HOOK_URL's watch, ticked by hand as the Node entry's timer ticks it (none without the variable). */
    archiveWatch,
    /** Log lines of one event. */
    events: (event: string) => lines.filter((line) => line.event === event),
    get: (path: string, init?: RequestInit) => app.request(`http://bff.test${path}`, init),
    subscribe: (email: string, ip = '203.0.113.7') =>
      app.request('http://bff.test/api/subscribe', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'x-test-client-ip': ip },
        body: JSON.stringify({ email, optInAttestation: true }),
      }),
  };
}

export type Instance = Awaited<ReturnType<typeof startInstance>>;

/** The fake upstream every instance reads, counting its calls. */
export function startUpstream(): FakeUpstream {
  return createFakeUpstream({ apiKey: REDIS_TEST_KEY, baseUrl: 'http://127.0.0.1:9/v1' });
}

/** Every upstream call so far, all operations together. */
export function upstreamCalls(fake: FakeUpstream): number {
  const { unknownSlugCalls: _unknown, ...byOperation } = fake.counts();
  return (Object.values(byOperation) as number[]).reduce((sum, calls) => sum + calls, 0);
}
