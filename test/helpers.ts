import type { Server } from 'node:http';
import { createApp, type AppDeps } from '../src/core/app.js';
import { parseConfig, type Config } from '../src/core/config/config.js';
import { createDemoUpstream, type DemoUpstream } from '../src/demo/upstream.js';
import { createLogger, type Logger } from '../src/core/log.js';
import type { Metrics } from '../src/core/metrics.js';
import type { SharedEntry, SharedTier } from '../src/core/reads/shared-tier.js';
import { createUpstreamClient, type UpstreamClientOptions } from '../src/core/upstream/newsletter-api.js';
import { observeResponses } from './contract/response-observer.js';

/** A fake key: tests assert it never appears in a response or a log line. */
export const TEST_API_KEY = 'test-key-7f3a9c1e-not-real';
export const TEST_BASE_URL = 'https://newsletter.test/v1';

/** A parsed config over test defaults; throws on a config problem so a typo fails loudly. */
export function testConfig(env: Record<string, string> = {}): Config {
  const result = parseConfig({
    NEWSLETTER_API_KEY: TEST_API_KEY,
    NEWSLETTER_API_BASE_URL: TEST_BASE_URL,
    ALLOWED_ORIGINS: 'https://site.example',
    ...env,
  });
  if (!result.ok) throw new Error(`test config is invalid: ${result.problems.join('; ')}`);
  return result.config;
}

/** A shared tier in a Map, as the isolates of one location (or instances sharing Redis) see it; `fail` makes reads throw. */
export function createMemoryStore() {
  const entries = new Map<string, SharedEntry>();
  let failing = false;
  const store: SharedTier = {
    get: async (key) => {
      if (failing) throw new Error('store unavailable');
      return entries.get(key);
    },
    put: async (key, entry) => void entries.set(key, entry),
    delete: async (key) => void entries.delete(key),
  };
  return { store, entries, fail: () => (failing = true) };
}

/** A clock that moves only when told to. Starts well above 0 (lru-cache treats 0 as "no time"). */
export function createFakeClock(start = 1_700_000_000_000) {
  let time = start;
  return {
    now: () => time,
    advance(ms: number) {
      time += ms;
    },
  };
}

export interface RecordedCall {
  method: string;
  url: URL;
  headers: Headers;
  body: string | undefined;
  redirect: RequestRedirect | undefined;
  signal: AbortSignal | undefined;
}

export type FetchHandler = (call: RecordedCall, index: number) => Response | Promise<Response>;

/** A scripted `fetch` that records every call (the fake upstream's call log). */
export function createScriptedFetch(handler: FetchHandler) {
  const calls: RecordedCall[] = [];
  const fetch: typeof globalThis.fetch = async (input, init) => {
    const request = new Request(input, init);
    const call: RecordedCall = {
      method: request.method,
      url: new URL(request.url),
      headers: request.headers,
      body: init?.body === undefined || init.body === null ? undefined : String(init.body),
      redirect: init?.redirect,
      signal: init?.signal ?? undefined,
    };
    calls.push(call);
    return handler(call, calls.length - 1);
  };
  return { fetch, calls };
}

/** A JSON response as the upstream would send it. */
export function jsonResponse(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json', ...headers } });
}

/** Collects log lines as parsed objects and as raw text (for leak checks). */
export function createLogCapture(now?: () => number): { log: Logger; lines: string[]; entries: () => Record<string, unknown>[] } {
  const lines: string[] = [];
  const log = createLogger({ write: (line) => lines.push(line), now, redact: [] });
  return { log, lines, entries: () => lines.map((line) => JSON.parse(line) as Record<string, unknown>) };
}

export interface TestAppOptions {
  env?: Record<string, string>;
  fetch?: typeof globalThis.fetch;
  clock?: ReturnType<typeof createFakeClock>;
  clientIp?: string;
  upstreamOptions?: Partial<UpstreamClientOptions>;
  metrics?: Metrics;
  /** Pages served outside /api/ (demo mode's example site). */
  site?: AppDeps['site'];
  /** The Turnstile check's fetch and timeout. */
  turnstile?: AppDeps['turnstile'];
  /** Any other dependency of createApp (a surge counter, the disposable list). */
  deps?: Partial<AppDeps>;
  /** Compressed copies of cached bodies (Node's encoder); none by default. */
  encodeBody?: AppDeps['encodeBody'];
}

/**
 * The real app with the real upstream client, over an injected fetch (the demo upstream by
 * default), a fake clock and immediate backoff sleeps: no sockets, no timers, no network.
 */
export function createTestApp(options: TestAppOptions = {}) {
  const clock = options.clock ?? createFakeClock();
  const logs = createLogCapture(clock.now);
  let demo: DemoUpstream | undefined;
  let fetch = options.fetch;
  let baseUrl = TEST_BASE_URL;
  let apiKey = TEST_API_KEY;
  if (!fetch) {
    demo = createDemoUpstream({ apiKey: TEST_API_KEY, now: clock.now });
    fetch = demo.fetch;
    baseUrl = demo.baseUrl;
  }
  const config = testConfig({ NEWSLETTER_API_BASE_URL: baseUrl, ...options.env });
  apiKey = config.apiKey ?? apiKey;
  const sleeps: number[] = [];
  const upstream = createUpstreamClient({
    baseUrl: config.apiBaseUrl ?? baseUrl,
    apiKey,
    timeoutMs: config.upstreamTimeoutMs,
    fetch,
    now: clock.now,
    random: () => 0.5,
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    ...options.upstreamOptions,
  });
  const service = createApp({
    config,
    upstream,
    now: clock.now,
    log: logs.log,
    clientIp: () => options.clientIp ?? '203.0.113.7',
    metrics: options.metrics,
    site: options.site,
    turnstile: options.turnstile,
    ...options.deps,
    encodeBody: options.encodeBody,
  });
  // `served`: the app's own fetch as the Node entry serves it, without the contract check of each answer.
  const served = { fetch: service.app.fetch };
  return {
    app: observeResponses(service.app),
    refuse: service.refuse,
    stats: service.stats,
    served,
    logAccess: service.logAccess,
    clock,
    logs,
    demo,
    config,
    sleeps,
    surge: service.surge,
    archiveWatch: service.archiveWatch,
  };
}

/** A Workers-style execution context that records `waitUntil` work, so a test can await it. */
export function createExecutionContext() {
  const pending: Promise<unknown>[] = [];
  const ctx = {
    waitUntil: (promise: Promise<unknown>) => {
      pending.push(promise);
    },
    passThroughOnException: () => undefined,
    props: {},
  };
  return {
    ctx,
    pending,
    /** Awaits all background work handed to waitUntil so far. */
    async settle() {
      await Promise.allSettled(pending.splice(0));
    },
  };
}

/** True inside the Workers runtime (the `workerd` test project). */
export function isWorkerd(): boolean {
  return typeof navigator !== 'undefined' && navigator.userAgent === 'Cloudflare-Workers';
}

/** Closes a loopback test server and every connection it still holds. */
export async function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}
