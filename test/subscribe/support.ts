/** Shared by the POST /api/subscribe suites: the app over a scripted upstream, posts, and expectations. */
import { expect } from 'vitest';
import { createApp } from '../../src/core/app.js';
import { createNodeClientIp } from '../../src/core/http/ip-address.js';
import { createUpstreamClient } from '../../src/core/upstream/newsletter-api.js';
import {
  TEST_API_KEY,
  TEST_BASE_URL,
  createFakeClock,
  createLogCapture,
  createScriptedFetch,
  createTestApp,
  jsonResponse,
  testConfig,
  type FetchHandler,
  type RecordedCall,
  type TestAppOptions,
} from '../helpers.js';

export const PATH = '/api/subscribe';
/** The one success reply: identical for new, repeated, refused and honeypot submissions. */
export const SUCCESS_BODY = '{"ok":true,"data":{"accepted":true}}';
export const EMAIL = 'jane@example.com';
export const MASKED_EMAIL = 'j***@example.com';
/** What a browser sends with a plain HTML form post. */
export const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';
export const REDIRECT_URL = 'https://site.example/thanks';

export type TestApp = ReturnType<typeof createTestApp>['app'];

export const subscriberCreated: FetchHandler = () => jsonResponse({ ok: true, data: { id: 'sub_0001', status: 'subscribed' } }, 201);

export function upstreamFailure(status: number, code: string, message: string, headers: Record<string, string> = {}): Response {
  return jsonResponse({ ok: false, error: { code, message } }, status, headers);
}

/** The real app and upstream client over a scripted upstream whose calls are recorded. */
export function createSubscribeApp(
  options: { env?: Record<string, string>; handler?: FetchHandler; clientIp?: string } & Pick<
    TestAppOptions,
    'deps' | 'turnstile' | 'metrics'
  > = {},
) {
  const upstream = createScriptedFetch(options.handler ?? subscriberCreated);
  const { handler: _handler, ...rest } = options;
  const test = createTestApp({ ...rest, fetch: upstream.fetch });
  return { ...test, calls: upstream.calls };
}

/**
 * The app built with `createApp` directly, with the Node entry's own client-IP function
 * (`X-Forwarded-For` behind `TRUST_PROXY_HOPS`) over a socket address taken from a test header,
 * so one app can see many visitors.
 */
export function createMultiClientApp(env: Record<string, string> = {}) {
  const clock = createFakeClock();
  const logs = createLogCapture(clock.now);
  const upstreamFetch = createScriptedFetch(subscriberCreated);
  const config = testConfig({ NEWSLETTER_API_BASE_URL: TEST_BASE_URL, ...env });
  const upstream = createUpstreamClient({
    baseUrl: TEST_BASE_URL,
    apiKey: TEST_API_KEY,
    timeoutMs: config.upstreamTimeoutMs,
    fetch: upstreamFetch.fetch,
    now: clock.now,
    random: () => 0.5,
    sleep: async () => {},
  });
  const { app } = createApp({
    config,
    upstream,
    now: clock.now,
    log: logs.log,
    clientIp: createNodeClientIp(config.trustProxyHops, (c) => c.req.header('x-test-socket-ip'), config.trustedProxies),
  });
  return { app, clock, logs, calls: upstreamFetch.calls };
}

export function postJson(app: TestApp, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return Promise.resolve(
    app.request(PATH, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    }),
  );
}

export function postForm(
  app: TestApp,
  fields: Record<string, string>,
  headers: Record<string, string> = {},
  path = PATH,
): Promise<Response> {
  return Promise.resolve(
    app.request(path, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams(fields).toString(),
    }),
  );
}

export function postMultipart(app: TestApp, fields: Record<string, string>, headers: Record<string, string> = {}): Promise<Response> {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) form.set(name, value);
  return Promise.resolve(app.request(PATH, { method: 'POST', headers, body: form }));
}

/** A body sent in chunks with no Content-Length, as `Transfer-Encoding: chunked` arrives. */
export function postChunked(app: TestApp, text: string, contentType = 'application/json'): Promise<Response> {
  const bytes = new TextEncoder().encode(text);
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      for (let offset = 0; offset < bytes.length; offset += 1024) controller.enqueue(bytes.slice(offset, offset + 1024));
      controller.close();
    },
  });
  const init = { method: 'POST', headers: { 'Content-Type': contentType }, body: stream, duplex: 'half' } as RequestInit;
  return Promise.resolve(app.request(PATH, init));
}

export function forwardedBody(call: RecordedCall | undefined): unknown {
  expect(call, 'expected an upstream call').toBeDefined();
  return JSON.parse(call?.body ?? 'null');
}

export function subscribeLogLines(logs: { entries: () => Record<string, unknown>[] }) {
  return logs.entries().filter((entry) => entry.event === 'subscribe');
}

/** An address of exactly `length` characters that is valid in every other way (64-char local part). */
export function emailOfLength(length: number): string {
  const local = 'a'.repeat(64);
  const filler = length - 64 - 1 - (63 + 1 + 63 + 1) - '.com'.length;
  return `${local}@${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(filler)}.com`;
}

export async function expectValidationError(response: Response, path: string) {
  expect(response.status).toBe(422);
  expect(response.headers.get('cache-control')).toBe('no-store');
  const body = (await response.json()) as { ok: boolean; error: { code: string; message: string; details?: unknown[] } };
  expect(body.ok).toBe(false);
  expect(body.error.code).toBe('VALIDATION_ERROR');
  expect(body.error.details).toEqual(expect.arrayContaining([{ path, message: expect.any(String) }]));
  for (const detail of body.error.details ?? []) expect(Object.keys(detail as object).sort()).toEqual(['message', 'path']);
  return body;
}

export async function expectErrorCode(response: Response, status: number, code: string) {
  expect(response.status).toBe(status);
  expect(response.headers.get('cache-control')).toBe('no-store');
  const body = (await response.json()) as { ok: boolean; error: { code: string } };
  expect(body).toMatchObject({ ok: false, error: { code } });
}

export async function expectAccepted(response: Response) {
  expect(response.status).toBe(200);
  expect(response.headers.get('cache-control')).toBe('no-store');
  expect(response.headers.get('location')).toBeNull();
  expect(await response.text()).toBe(SUCCESS_BODY);
}

export function expectRedirect(response: Response): URL {
  expect(response.status).toBe(303);
  expect(response.headers.get('cache-control')).toBe('no-store');
  const location = response.headers.get('location');
  expect(location).not.toBeNull();
  return new URL(location ?? '');
}
