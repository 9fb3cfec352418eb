import { describe, expect, it } from 'vitest';
import { createApp } from '../../src/app.js';
import { createNodeClientIp } from '../../src/client-ip.js';
import { DEMO_BLOCKED_EMAIL, createDemoUpstream } from '../../src/demo/demo-upstream.js';
import { createUpstreamClient } from '../../src/upstream.js';
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
} from '../helpers.js';

// PRODUCT.md "POST /api/subscribe" and issue 4.

const PATH = '/api/subscribe';
/** The one success reply: identical for new, repeated, refused and honeypot submissions. */
const SUCCESS_BODY = '{"ok":true,"data":{"accepted":true}}';
const EMAIL = 'jane@example.com';
const MASKED_EMAIL = 'j***@example.com';
/** What a browser sends with a plain HTML form post. */
const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';
const REDIRECT_URL = 'https://site.example/thanks';

type TestApp = ReturnType<typeof createTestApp>['app'];

const subscriberCreated: FetchHandler = () => jsonResponse({ ok: true, data: { id: 'sub_0001', status: 'subscribed' } }, 201);

function upstreamFailure(status: number, code: string, message: string, headers: Record<string, string> = {}): Response {
  return jsonResponse({ ok: false, error: { code, message } }, status, headers);
}

/** The real app and upstream client over a scripted upstream whose calls are recorded. */
function createSubscribeApp(options: { env?: Record<string, string>; handler?: FetchHandler; clientIp?: string } = {}) {
  const upstream = createScriptedFetch(options.handler ?? subscriberCreated);
  const test = createTestApp({ fetch: upstream.fetch, env: options.env, clientIp: options.clientIp });
  return { ...test, calls: upstream.calls };
}

/**
 * The app built with `createApp` directly, with the Node entry's own client-IP function
 * (`X-Forwarded-For` behind `TRUST_PROXY_HOPS`) over a socket address taken from a test header,
 * so one app can see many visitors.
 */
function createMultiClientApp(env: Record<string, string> = {}) {
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
    clientIp: createNodeClientIp(config.trustProxyHops, (c) => c.req.header('x-test-socket-ip')),
  });
  return { app, clock, logs, calls: upstreamFetch.calls };
}

function postJson(app: TestApp, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return Promise.resolve(
    app.request(PATH, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    }),
  );
}

function postForm(
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

function postMultipart(app: TestApp, fields: Record<string, string>, headers: Record<string, string> = {}): Promise<Response> {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) form.set(name, value);
  return Promise.resolve(app.request(PATH, { method: 'POST', headers, body: form }));
}

/** A body sent in chunks with no Content-Length, as `Transfer-Encoding: chunked` arrives. */
function postChunked(app: TestApp, text: string, contentType = 'application/json'): Promise<Response> {
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

function forwardedBody(call: RecordedCall | undefined): unknown {
  expect(call, 'expected an upstream call').toBeDefined();
  return JSON.parse(call?.body ?? 'null');
}

function subscribeLogLines(logs: { entries: () => Record<string, unknown>[] }) {
  return logs.entries().filter((entry) => entry.event === 'subscribe');
}

/** An address of exactly `length` characters that is valid in every other way (64-char local part). */
function emailOfLength(length: number): string {
  const local = 'a'.repeat(64);
  const filler = length - 64 - 1 - (63 + 1 + 63 + 1) - '.com'.length;
  return `${local}@${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(filler)}.com`;
}

async function expectValidationError(response: Response, path: string) {
  expect(response.status).toBe(422);
  expect(response.headers.get('cache-control')).toBe('no-store');
  const body = (await response.json()) as { ok: boolean; error: { code: string; message: string; details?: unknown[] } };
  expect(body.ok).toBe(false);
  expect(body.error.code).toBe('VALIDATION_ERROR');
  expect(body.error.details).toEqual(expect.arrayContaining([{ path, message: expect.any(String) }]));
  for (const detail of body.error.details ?? []) expect(Object.keys(detail as object).sort()).toEqual(['message', 'path']);
  return body;
}

async function expectErrorCode(response: Response, status: number, code: string) {
  expect(response.status).toBe(status);
  expect(response.headers.get('cache-control')).toBe('no-store');
  const body = (await response.json()) as { ok: boolean; error: { code: string } };
  expect(body).toMatchObject({ ok: false, error: { code } });
}

async function expectAccepted(response: Response) {
  expect(response.status).toBe(200);
  expect(response.headers.get('cache-control')).toBe('no-store');
  expect(response.headers.get('location')).toBeNull();
  expect(await response.text()).toBe(SUCCESS_BODY);
}

function expectRedirect(response: Response): URL {
  expect(response.status).toBe(303);
  expect(response.headers.get('cache-control')).toBe('no-store');
  const location = response.headers.get('location');
  expect(location).not.toBeNull();
  return new URL(location ?? '');
}

describe('POST /api/subscribe', () => {
  describe('accepted input', () => {
    it('accepts a JSON body and makes exactly one Create Subscriber call', async () => {
      const { app, calls } = createSubscribeApp();
      const response = await postJson(app, { email: EMAIL, optInAttestation: true });
      await expectAccepted(response);
      expect(calls).toHaveLength(1);
      expect(calls[0]?.method).toBe('POST');
      expect(calls[0]?.url.href).toBe(`${TEST_BASE_URL}/newsletter/subscribers`);
    });

    it('accepts an urlencoded form post with a checked checkbox', async () => {
      const { app, calls } = createSubscribeApp();
      const response = await postForm(app, { email: EMAIL, optInAttestation: 'on' }, { Accept: 'application/json' });
      await expectAccepted(response);
      expect(calls).toHaveLength(1);
      expect(forwardedBody(calls[0])).toMatchObject({ email: EMAIL, optInAttestation: true });
    });

    it('accepts a multipart/form-data post built with FormData', async () => {
      const { app, calls } = createSubscribeApp();
      const response = await postMultipart(app, { email: EMAIL, optInAttestation: 'on' }, { Accept: 'application/json' });
      await expectAccepted(response);
      expect(calls).toHaveLength(1);
      expect(forwardedBody(calls[0])).toMatchObject({ email: EMAIL, optInAttestation: true });
    });

    it('accepts a JSON body whose content type carries a charset parameter', async () => {
      const { app, calls } = createSubscribeApp();
      const response = await postJson(app, { email: EMAIL, optInAttestation: true }, { 'Content-Type': 'Application/JSON; charset=utf-8' });
      await expectAccepted(response);
      expect(calls).toHaveLength(1);
    });

    it('accepts a chunked JSON body with no Content-Length when it is under the cap', async () => {
      const { app, calls } = createSubscribeApp();
      const response = await postChunked(app, JSON.stringify({ email: EMAIL, optInAttestation: true, padding: 'x'.repeat(4000) }));
      await expectAccepted(response);
      expect(calls).toHaveLength(1);
    });
  });

  describe('content type and size', () => {
    it('returns 415 and makes no upstream call for a text/plain body', async () => {
      const { app, calls } = createSubscribeApp();
      const response = await app.request(PATH, {
        method: 'POST',
        headers: { 'Content-Type': 'text/plain' },
        body: JSON.stringify({ email: EMAIL, optInAttestation: true }),
      });
      await expectErrorCode(response, 415, 'UNSUPPORTED_MEDIA_TYPE');
      expect(calls).toHaveLength(0);
    });

    it('returns 415 and makes no upstream call for a body with no content type', async () => {
      const { app, calls } = createSubscribeApp();
      const request = new Request(`http://localhost${PATH}`, {
        method: 'POST',
        body: new TextEncoder().encode(JSON.stringify({ email: EMAIL, optInAttestation: true })),
      });
      expect(request.headers.get('content-type')).toBeNull();
      const response = await app.request(request);
      await expectErrorCode(response, 415, 'UNSUPPORTED_MEDIA_TYPE');
      expect(calls).toHaveLength(0);
    });

    it('returns 413 and makes no upstream call for a declared body over 8 KB', async () => {
      const { app, calls } = createSubscribeApp();
      const body = JSON.stringify({ email: EMAIL, optInAttestation: true, padding: 'x'.repeat(9000) });
      const response = await app.request(PATH, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'Content-Length': String(new TextEncoder().encode(body).length) },
        body,
      });
      await expectErrorCode(response, 413, 'PAYLOAD_TOO_LARGE');
      expect(calls).toHaveLength(0);
    });

    it('returns 413 and makes no upstream call for a chunked body over 8 KB with no Content-Length', async () => {
      const { app, calls } = createSubscribeApp();
      const response = await postChunked(app, JSON.stringify({ email: EMAIL, optInAttestation: true, padding: 'x'.repeat(9000) }));
      await expectErrorCode(response, 413, 'PAYLOAD_TOO_LARGE');
      expect(calls).toHaveLength(0);
    });

    it('returns 422 in the envelope and makes no upstream call for malformed JSON', async () => {
      const { app, calls } = createSubscribeApp();
      const response = await postJson(app, '{"email": "jane@example.com", "optInAttestation": tru');
      await expectValidationError(response, '(body)');
      expect(calls).toHaveLength(0);
    });

    it.each([
      { label: 'an array', raw: '[{"email":"jane@example.com","optInAttestation":true}]' },
      { label: 'a string', raw: '"jane@example.com"' },
      { label: 'null', raw: 'null' },
      { label: 'a number', raw: '42' },
    ].map((entry) => [entry.label, entry] as const))('returns 422 (never 500) and makes no upstream call when the JSON body is %s', async (_label, { raw }) => {
      const { app, calls } = createSubscribeApp();
      const response = await postJson(app, raw);
      await expectValidationError(response, '(body)');
      expect(calls).toHaveLength(0);
    });
  });

  describe('validation', () => {
    it.each([
      { label: 'email is missing', body: { optInAttestation: true }, path: 'email' },
      { label: 'email is empty', body: { email: '   ', optInAttestation: true }, path: 'email' },
      { label: 'email is not an address', body: { email: 'not-an-email', optInAttestation: true }, path: 'email' },
      { label: 'email is not a string', body: { email: ['jane@example.com'], optInAttestation: true }, path: 'email' },
      { label: 'email is 255 characters long', body: { email: emailOfLength(255), optInAttestation: true }, path: 'email' },
      { label: 'email contains CR/LF', body: { email: 'jane@example.com\r\nBcc: x@example.com', optInAttestation: true }, path: 'email' },
      { label: 'email contains a bare LF', body: { email: 'jane\n@example.com', optInAttestation: true }, path: 'email' },
      { label: 'email contains NUL', body: { email: 'jane@example.com\u0000', optInAttestation: true }, path: 'email' },
      { label: 'optInAttestation is missing', body: { email: EMAIL }, path: 'optInAttestation' },
      { label: 'optInAttestation is false', body: { email: EMAIL, optInAttestation: false }, path: 'optInAttestation' },
      { label: 'optInAttestation is "false"', body: { email: EMAIL, optInAttestation: 'false' }, path: 'optInAttestation' },
      { label: 'optInAttestation is "no"', body: { email: EMAIL, optInAttestation: 'no' }, path: 'optInAttestation' },
      { label: 'optInAttestation is 0', body: { email: EMAIL, optInAttestation: 0 }, path: 'optInAttestation' },
      { label: 'optInAttestation is "maybe"', body: { email: EMAIL, optInAttestation: 'maybe' }, path: 'optInAttestation' },
      { label: 'optInAttestation is null', body: { email: EMAIL, optInAttestation: null }, path: 'optInAttestation' },
      { label: 'source is over 160 characters', body: { email: EMAIL, optInAttestation: true, source: 's'.repeat(161) }, path: 'source' },
      { label: 'source contains CR/LF', body: { email: EMAIL, optInAttestation: true, source: 'footer\r\nInjected: 1' }, path: 'source' },
      { label: "sourcePlatform is 'facebook'", body: { email: EMAIL, optInAttestation: true, sourcePlatform: 'facebook' }, path: 'sourcePlatform' },
    ].map((entry) => [entry.label, entry] as const))('returns 422 and makes no upstream call when %s', async (_label, { body, path }) => {
      const { app, calls } = createSubscribeApp();
      const response = await postJson(app, body);
      await expectValidationError(response, path);
      expect(calls).toHaveLength(0);
    });

    // Only a form checkbox sends text; a JSON caller must send the boolean (PRODUCT.md "POST /api/subscribe").
    it.each(['true', 'on', 'yes', '1', 1])(
      'returns 422 and makes no upstream call when JSON sends optInAttestation as %j instead of true',
      async (value) => {
        const { app, calls } = createSubscribeApp();
        const response = await postJson(app, { email: EMAIL, optInAttestation: value });
        await expectValidationError(response, 'optInAttestation');
        expect(calls).toHaveLength(0);
      },
    );

    it('returns 422 and makes no upstream call when optInAttestation is only inherited via __proto__', async () => {
      const { app, calls } = createSubscribeApp();
      const raw = '{"email":"jane@example.com","__proto__":{"optInAttestation":true}}';
      const response = await postJson(app, raw);
      await expectValidationError(response, 'optInAttestation');
      expect(calls).toHaveLength(0);
    });

    it.each(['off', 'false', '0', 'no', '', 'maybe'])(
      'returns 422 and makes no upstream call when a form sends optInAttestation=%j',
      async (value) => {
        const { app, calls } = createSubscribeApp();
        const response = await postForm(app, { email: EMAIL, optInAttestation: value }, { Accept: 'application/json' });
        await expectValidationError(response, 'optInAttestation');
        expect(calls).toHaveLength(0);
      },
    );

    it('returns 422 and makes no upstream call when a form has no optInAttestation (checkbox left unchecked)', async () => {
      const { app, calls } = createSubscribeApp();
      const response = await postForm(app, { email: EMAIL }, { Accept: 'application/json' });
      await expectValidationError(response, 'optInAttestation');
      expect(calls).toHaveLength(0);
    });

    it.each(['on', 'true', '1', 'yes'])('accepts optInAttestation=%s from a form and makes exactly one upstream call', async (value) => {
      const { app, calls } = createSubscribeApp();
      const response = await postForm(app, { email: EMAIL, optInAttestation: value }, { Accept: 'application/json' });
      await expectAccepted(response);
      expect(calls).toHaveLength(1);
      expect(forwardedBody(calls[0])).toMatchObject({ optInAttestation: true });
    });

    it('accepts an email of exactly 254 characters', async () => {
      const { app, calls } = createSubscribeApp();
      const email = emailOfLength(254);
      expect(email).toHaveLength(254);
      const response = await postJson(app, { email, optInAttestation: true });
      await expectAccepted(response);
      expect(calls).toHaveLength(1);
      expect(forwardedBody(calls[0])).toMatchObject({ email });
    });

    it('trims the email before forwarding it', async () => {
      const { app, calls } = createSubscribeApp();
      const response = await postJson(app, { email: `  ${EMAIL}\t `, optInAttestation: true });
      await expectAccepted(response);
      expect(forwardedBody(calls[0])).toMatchObject({ email: EMAIL });
    });

    it('does not echo the submitted email in a validation error', async () => {
      const { app } = createSubscribeApp();
      const response = await postJson(app, { email: 'secret-person@@example.com', optInAttestation: true });
      expect(response.status).toBe(422);
      expect(await response.text()).not.toContain('secret-person');
    });
  });

  describe('forwarded body', () => {
    it('sends the upstream exactly email, optInAttestation, sourceType embed and source website by default', async () => {
      const { app, calls } = createSubscribeApp();
      await postJson(app, { email: EMAIL, optInAttestation: true });
      expect(calls).toHaveLength(1);
      expect(forwardedBody(calls[0])).toStrictEqual({
        email: EMAIL,
        optInAttestation: true,
        sourceType: 'embed',
        source: 'website',
      });
    });

    it('forwards source and sourcePlatform when the client gives them', async () => {
      const { app, calls } = createSubscribeApp();
      await postJson(app, { email: EMAIL, optInAttestation: true, source: 'footer-form', sourcePlatform: 'linkedin' });
      expect(forwardedBody(calls[0])).toStrictEqual({
        email: EMAIL,
        optInAttestation: true,
        sourceType: 'embed',
        source: 'footer-form',
        sourcePlatform: 'linkedin',
      });
    });

    it('accepts a source of exactly 160 characters', async () => {
      const { app, calls } = createSubscribeApp();
      const source = 's'.repeat(160);
      await expectAccepted(await postJson(app, { email: EMAIL, optInAttestation: true, source }));
      expect(forwardedBody(calls[0])).toMatchObject({ source });
    });

    it('never forwards client-sent sourceType, status, workspaceId, sourceIssueId or other extra fields', async () => {
      const { app, calls } = createSubscribeApp();
      const response = await postJson(app, {
        email: EMAIL,
        optInAttestation: true,
        sourceType: 'import',
        status: 'subscribed',
        workspaceId: 'ws_attacker',
        accountSetId: 'as_attacker',
        sourceIssueId: 'iss_123',
        id: 'sub_9999',
      });
      await expectAccepted(response);
      expect(forwardedBody(calls[0])).toStrictEqual({
        email: EMAIL,
        optInAttestation: true,
        sourceType: 'embed',
        source: 'website',
      });
    });

    it('never forwards extra fields of a form post either', async () => {
      const { app, calls } = createSubscribeApp();
      await postForm(
        app,
        { email: EMAIL, optInAttestation: 'on', sourceType: 'import', status: 'blocked', workspaceId: 'ws_attacker' },
        { Accept: 'application/json' },
      );
      expect(forwardedBody(calls[0])).toStrictEqual({
        email: EMAIL,
        optInAttestation: true,
        sourceType: 'embed',
        source: 'website',
      });
    });

    it('uses SUBSCRIBE_SOURCE_TYPE and SUBSCRIBE_DEFAULT_SOURCE from the config', async () => {
      const { app, calls } = createSubscribeApp({
        env: { SUBSCRIBE_SOURCE_TYPE: 'subscribe_page', SUBSCRIBE_DEFAULT_SOURCE: 'homepage-footer' },
      });
      await postJson(app, { email: EMAIL, optInAttestation: true, sourceType: 'api' });
      expect(forwardedBody(calls[0])).toStrictEqual({
        email: EMAIL,
        optInAttestation: true,
        sourceType: 'subscribe_page',
        source: 'homepage-footer',
      });
    });

    it('sends the API key as a bearer token and passes on no header of the visitor', async () => {
      const { app, calls } = createSubscribeApp();
      await postJson(app, { email: EMAIL, optInAttestation: true }, {
        Cookie: 'session=visitor-cookie',
        'X-Forwarded-For': '198.51.100.23',
        'User-Agent': 'VisitorBrowser/1.0',
        Referer: 'https://site.example/newsletter',
        Origin: 'https://site.example',
        'X-Custom-Visitor': 'visitor-value',
      });
      expect(calls).toHaveLength(1);
      const headers = calls[0]?.headers ?? new Headers();
      expect(headers.get('authorization')).toBe(`Bearer ${TEST_API_KEY}`);
      expect([...headers.keys()].sort()).toEqual(['accept', 'authorization', 'content-type']);
      expect(headers.get('content-type')).toBe('application/json');
      for (const [, value] of headers) {
        expect(value).not.toMatch(/visitor|198\.51\.100\.23|site\.example/i);
      }
    });
  });

  describe('no enumeration', () => {
    it('answers a new address, the same address again and an address the upstream refuses identically', async () => {
      const { app, calls } = createSubscribeApp({
        handler: (call) =>
          (JSON.parse(call.body ?? '{}') as { email?: string }).email === 'refused@example.com'
            ? upstreamFailure(409, 'SUBSCRIBER_BLOCKED', 'Subscriber refused@example.com is blocked')
            : subscriberCreated(call, 0),
      });
      const replies: { status: number; body: string; type: string | null }[] = [];
      for (const email of [EMAIL, EMAIL, 'refused@example.com']) {
        const response = await postJson(app, { email, optInAttestation: true });
        replies.push({ status: response.status, body: await response.text(), type: response.headers.get('content-type') });
      }
      expect(replies.map((reply) => reply.body)).toEqual([SUCCESS_BODY, SUCCESS_BODY, SUCCESS_BODY]);
      expect(replies.map((reply) => reply.status)).toEqual([200, 200, 200]);
      expect(new Set(replies.map((reply) => reply.type)).size).toBe(1);
      // The repeat of jane@example.com was answered without a second upstream call.
      expect(calls.map((call) => (JSON.parse(call.body ?? '{}') as { email: string }).email)).toEqual([
        EMAIL,
        'refused@example.com',
      ]);
    });

    it('answers the same address again within 10 minutes without a second upstream call', async () => {
      const { app, calls, clock } = createSubscribeApp();
      await expectAccepted(await postJson(app, { email: EMAIL, optInAttestation: true }));
      clock.advance(9 * 60 * 1000);
      await expectAccepted(await postJson(app, { email: EMAIL, optInAttestation: true }));
      expect(calls).toHaveLength(1);
    });

    it('treats the same address in other case and spacing as the same address', async () => {
      const { app, calls } = createSubscribeApp();
      await expectAccepted(await postJson(app, { email: EMAIL, optInAttestation: true }));
      await expectAccepted(await postJson(app, { email: '  Jane@EXAMPLE.com ', optInAttestation: true }));
      expect(calls).toHaveLength(1);
    });

    it('makes a new upstream call for the same address after 10 minutes have passed', async () => {
      const { app, calls, clock } = createSubscribeApp();
      await expectAccepted(await postJson(app, { email: EMAIL, optInAttestation: true }));
      clock.advance(10 * 60 * 1000 + 1);
      await expectAccepted(await postJson(app, { email: EMAIL, optInAttestation: true }));
      expect(calls).toHaveLength(2);
    });

    it.each([
      { status: 400, code: 'BAD_REQUEST' },
      { status: 400, code: 'NOT_FOUND' },
      { status: 409, code: 'SUBSCRIBER_BLOCKED' },
      { status: 410, code: 'SUBSCRIBER_UNSUBSCRIBED' },
    ])(
      'answers 200 with the success body when the upstream refuses the address with $status $code',
      async ({ status, code }) => {
        const { app, calls } = createSubscribeApp({
          handler: () => upstreamFailure(status, code, `Subscriber ${EMAIL} cannot be subscribed: it is ${code}`),
        });
        await expectAccepted(await postJson(app, { email: EMAIL, optInAttestation: true }));
        expect(calls).toHaveLength(1);
      },
    );

    // Issue 4: "any upstream 4xx other than 401/422/429" gets the identical reply. A 403 that only
    // some addresses get would otherwise tell a caller those addresses are special.
    it('answers 200 with the success body when the upstream refuses the address with 403', async () => {
      const { app, calls } = createSubscribeApp({
        handler: () => upstreamFailure(403, 'SUBSCRIBER_BLOCKED', `Subscriber ${EMAIL} is blocked`),
      });
      await expectAccepted(await postJson(app, { email: EMAIL, optInAttestation: true }));
      expect(calls).toHaveLength(1);
    });

    // A 404 on our fixed POST path is the deployment's (a wrong base URL), the same for every
    // address, so answering it as an error tells nothing about this one.
    it('answers an upstream 404 with 502 UPSTREAM_ERROR, logs it as an error with a hint, and does not remember the address', async () => {
      const { app, calls, logs } = createSubscribeApp({
        handler: (call, index) =>
          index === 0 ? upstreamFailure(404, 'NOT_FOUND', 'Cannot POST /newsletter/subscribers') : subscriberCreated(call, index),
      });
      const response = await postJson(app, { email: EMAIL, optInAttestation: true });
      const text = await response.clone().text();
      await expectErrorCode(response, 502, 'UPSTREAM_ERROR');
      expect(text).not.toContain('Cannot POST');
      expect(subscribeLogLines(logs)).toEqual([
        expect.objectContaining({
          level: 'error',
          outcome: 'failed',
          email: MASKED_EMAIL,
          upstreamStatus: '404',
          hint: expect.stringContaining('NEWSLETTER_API_BASE_URL'),
        }),
      ]);
      // Not remembered as subscribed: the next attempt for the same address goes upstream again.
      await expectAccepted(await postJson(app, { email: EMAIL, optInAttestation: true }));
      expect(calls).toHaveLength(2);
    });

    it('answers an upstream 404 alike for every address, so it tells nothing about one', async () => {
      const { app, calls } = createSubscribeApp({
        handler: () => upstreamFailure(404, 'NOT_FOUND', 'no such route'),
      });
      const replies: string[] = [];
      for (const email of [EMAIL, 'other@example.com']) {
        const response = await postJson(app, { email, optInAttestation: true });
        expect(response.status).toBe(502);
        replies.push(await response.text());
      }
      expect(replies[1]).toBe(replies[0]);
      expect(calls).toHaveLength(2);
    });

    it("answers the demo upstream's blocked address exactly like a new address", async () => {
      const clock = createFakeClock();
      const demo = createDemoUpstream({ apiKey: TEST_API_KEY, now: clock.now });
      const upstream = createScriptedFetch((call) =>
        demo.fetch(call.url, { method: call.method, headers: call.headers, body: call.body }),
      );
      const { app } = createTestApp({ fetch: upstream.fetch, clock, env: { NEWSLETTER_API_BASE_URL: demo.baseUrl } });

      const fresh = await postJson(app, { email: 'new-reader@example.com', optInAttestation: true });
      const blocked = await postJson(app, { email: DEMO_BLOCKED_EMAIL, optInAttestation: true });

      expect([fresh.status, blocked.status]).toEqual([200, 200]);
      expect([await fresh.text(), await blocked.text()]).toEqual([SUCCESS_BODY, SUCCESS_BODY]);
      expect(upstream.calls).toHaveLength(2);
      expect(demo.subscribers.get('new-reader@example.com')?.status).toBe('subscribed');
      expect(demo.subscribers.get(DEMO_BLOCKED_EMAIL)?.status).toBe('blocked');
    });

    it('answers the demo upstream by default (createTestApp) with the success body for the blocked address', async () => {
      const { app, demo } = createTestApp();
      await expectAccepted(await postJson(app, { email: DEMO_BLOCKED_EMAIL, optInAttestation: true }));
      expect(demo?.subscribers.get(DEMO_BLOCKED_EMAIL)?.status).toBe('blocked');
    });

    it("answers an upstream 422 with our own 422 that does not contain the upstream's message", async () => {
      const upstreamMessage = 'Domain mailinator.test is on the workspace denylist ws_4411';
      const { app, calls } = createSubscribeApp({
        handler: () =>
          jsonResponse(
            {
              ok: false,
              error: { code: 'VALIDATION_ERROR', message: upstreamMessage, details: [{ path: 'email', message: 'Disposable domain rejected' }] },
            },
            422,
          ),
      });
      const response = await postJson(app, { email: 'someone@mailinator.test', optInAttestation: true });
      const text = await response.clone().text();
      const body = await expectValidationError(response, 'email');
      expect(calls).toHaveLength(1);
      expect(body.error.message).not.toContain(upstreamMessage);
      for (const fragment of ['denylist', 'ws_4411', 'Disposable', 'mailinator']) expect(text).not.toContain(fragment);
    });

    it('answers an upstream 401 with 502 UPSTREAM_ERROR, never 401', async () => {
      const { app, calls } = createSubscribeApp({
        handler: () => upstreamFailure(401, 'UNAUTHORIZED', 'API key missing or invalid'),
      });
      const response = await postJson(app, { email: EMAIL, optInAttestation: true });
      const text = await response.clone().text();
      await expectErrorCode(response, 502, 'UPSTREAM_ERROR');
      expect(text).not.toContain('API key missing or invalid');
      expect(calls).toHaveLength(1);
    });

    it('retries an upstream 500 once (two calls) and then answers 502 UPSTREAM_ERROR', async () => {
      const { app, calls } = createSubscribeApp({
        handler: () => upstreamFailure(500, 'INTERNAL', 'database connection lost'),
      });
      const response = await postJson(app, { email: EMAIL, optInAttestation: true });
      await expectErrorCode(response, 502, 'UPSTREAM_ERROR');
      expect(calls).toHaveLength(2);
      expect(forwardedBody(calls[1])).toStrictEqual(forwardedBody(calls[0]));
    });

    it('answers with success when the one retry after an upstream 500 succeeds', async () => {
      const { app, calls } = createSubscribeApp({
        handler: (call, index) => (index === 0 ? upstreamFailure(500, 'INTERNAL', 'oops') : subscriberCreated(call, index)),
      });
      await expectAccepted(await postJson(app, { email: EMAIL, optInAttestation: true }));
      expect(calls).toHaveLength(2);
    });

    it('does not remember a failed address as subscribed: the next attempt calls the upstream again', async () => {
      const { app, calls } = createSubscribeApp({
        handler: (call, index) => (index < 2 ? upstreamFailure(503, 'UNAVAILABLE', 'down') : subscriberCreated(call, index)),
      });
      await expectErrorCode(await postJson(app, { email: EMAIL, optInAttestation: true }), 502, 'UPSTREAM_ERROR');
      await expectAccepted(await postJson(app, { email: EMAIL, optInAttestation: true }));
      expect(calls).toHaveLength(3);
    });

    it('answers 503 UPSTREAM_UNAVAILABLE with Retry-After when the upstream call times out', async () => {
      const { app, calls } = createSubscribeApp({
        handler: () => Promise.reject(new DOMException('The operation was aborted due to timeout', 'TimeoutError')),
      });
      const response = await postJson(app, { email: EMAIL, optInAttestation: true });
      expect(response.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
      await expectErrorCode(response, 503, 'UPSTREAM_UNAVAILABLE');
      expect(calls).toHaveLength(1);
    });

    it("answers 503 UPSTREAM_UNAVAILABLE with the upstream's Retry-After when the upstream answers 429", async () => {
      const { app, calls } = createSubscribeApp({
        handler: () => upstreamFailure(429, 'RATE_LIMITED', 'Too many requests', { 'Retry-After': '17' }),
      });
      const response = await postJson(app, { email: EMAIL, optInAttestation: true });
      expect(response.headers.get('retry-after')).toBe('17');
      await expectErrorCode(response, 503, 'UPSTREAM_UNAVAILABLE');
      expect(calls).toHaveLength(1);
    });

    it('does not call the upstream again while its 429 Retry-After is running', async () => {
      const { app, calls, clock } = createSubscribeApp({
        handler: () => upstreamFailure(429, 'RATE_LIMITED', 'Too many requests', { 'Retry-After': '17' }),
      });
      await postJson(app, { email: EMAIL, optInAttestation: true });
      clock.advance(5_000);
      const response = await postJson(app, { email: 'other@example.com', optInAttestation: true });
      expect(response.headers.get('retry-after')).toBe('12');
      await expectErrorCode(response, 503, 'UPSTREAM_UNAVAILABLE');
      expect(calls).toHaveLength(1);
    });
  });

  describe('honeypot', () => {
    it('answers a filled honeypot in JSON with the success body and makes no upstream call', async () => {
      const { app, calls } = createSubscribeApp();
      const response = await postJson(app, { email: EMAIL, optInAttestation: true, website: 'https://spam.example' });
      await expectAccepted(response);
      expect(calls).toHaveLength(0);
    });

    it('answers a filled honeypot in a form post with the success body and makes no upstream call', async () => {
      const { app, calls } = createSubscribeApp();
      const response = await postForm(
        app,
        { email: EMAIL, optInAttestation: 'on', website: 'spam' },
        { Accept: 'application/json' },
      );
      await expectAccepted(response);
      expect(calls).toHaveLength(0);
    });

    it('answers a filled honeypot with success even when the rest of the submission is invalid', async () => {
      const { app, calls } = createSubscribeApp();
      await expectAccepted(await postJson(app, { email: 'not-an-email', website: 'spam' }));
      expect(calls).toHaveLength(0);
    });

    it('redirects a filled honeypot form post to the success URL like a real subscription, with no upstream call', async () => {
      const { app, calls } = createSubscribeApp({ env: { SUBSCRIBE_REDIRECT_URL: REDIRECT_URL } });
      const response = await postForm(app, { email: EMAIL, optInAttestation: 'on', website: 'spam' }, { Accept: BROWSER_ACCEPT });
      const location = expectRedirect(response);
      expect(location.searchParams.get('subscribed')).toBe('1');
      expect(calls).toHaveLength(0);
    });

    it('uses the honeypot field name from SUBSCRIBE_HONEYPOT_FIELD', async () => {
      const { app, calls } = createSubscribeApp({ env: { SUBSCRIBE_HONEYPOT_FIELD: 'fax_number' } });
      await expectAccepted(await postJson(app, { email: EMAIL, optInAttestation: true, fax_number: '555-0100' }));
      expect(calls).toHaveLength(0);
      // `website` is now just an unknown field: dropped, not a trap.
      await expectAccepted(await postJson(app, { email: 'other@example.com', optInAttestation: true, website: 'x' }));
      expect(calls).toHaveLength(1);
      expect(forwardedBody(calls[0])).not.toHaveProperty('website');
    });

    it.each(['', '   '])('forwards the subscription when the honeypot is present but empty (%j)', async (value) => {
      const { app, calls } = createSubscribeApp();
      await expectAccepted(await postForm(app, { email: EMAIL, optInAttestation: 'on', website: value }, { Accept: 'application/json' }));
      expect(calls).toHaveLength(1);
      expect(forwardedBody(calls[0])).not.toHaveProperty('website');
    });
  });

  describe('rate limit', () => {
    const env = { SUBSCRIBE_RATE_LIMIT_PER_MINUTE: '3' };
    const fromIp = (ip: string) => ({ 'X-Test-Socket-Ip': ip });

    it('answers the 4th attempt in a minute from one IP with 429 RATE_LIMITED and Retry-After, without an upstream call', async () => {
      const { app, calls } = createMultiClientApp(env);
      for (let attempt = 1; attempt <= 3; attempt += 1) {
        await expectAccepted(await postJson(app, { email: `reader${attempt}@example.com`, optInAttestation: true }, fromIp('192.0.2.1')));
      }
      const response = await postJson(app, { email: 'reader4@example.com', optInAttestation: true }, fromIp('192.0.2.1'));
      expect(response.headers.get('retry-after')).toBe('60');
      await expectErrorCode(response, 429, 'RATE_LIMITED');
      expect(calls).toHaveLength(3);
    });

    it('counts the attempts of one IP with the default limit of 10 a minute', async () => {
      const { app, calls } = createMultiClientApp();
      for (let attempt = 1; attempt <= 10; attempt += 1) {
        await expectAccepted(await postJson(app, { email: `reader${attempt}@example.com`, optInAttestation: true }, fromIp('192.0.2.1')));
      }
      await expectErrorCode(await postJson(app, { email: 'reader11@example.com', optInAttestation: true }, fromIp('192.0.2.1')), 429, 'RATE_LIMITED');
      expect(calls).toHaveLength(10);
    });

    it('allows the IP again once 60 seconds have passed', async () => {
      const { app, calls, clock } = createMultiClientApp(env);
      for (let attempt = 1; attempt <= 4; attempt += 1) {
        await postJson(app, { email: `reader${attempt}@example.com`, optInAttestation: true }, fromIp('192.0.2.1'));
      }
      clock.advance(30_000);
      const stillLimited = await postJson(app, { email: 'reader5@example.com', optInAttestation: true }, fromIp('192.0.2.1'));
      expect(stillLimited.headers.get('retry-after')).toBe('30');
      await expectErrorCode(stillLimited, 429, 'RATE_LIMITED');
      clock.advance(30_000);
      await expectAccepted(await postJson(app, { email: 'reader6@example.com', optInAttestation: true }, fromIp('192.0.2.1')));
      expect(calls).toHaveLength(4);
    });

    it('does not limit a different IP when one IP is limited', async () => {
      const { app, calls } = createMultiClientApp(env);
      for (let attempt = 1; attempt <= 4; attempt += 1) {
        await postJson(app, { email: `reader${attempt}@example.com`, optInAttestation: true }, fromIp('192.0.2.1'));
      }
      await expectAccepted(await postJson(app, { email: 'neighbour@example.com', optInAttestation: true }, fromIp('192.0.2.2')));
      expect(calls).toHaveLength(4);
    });

    it('counts attempts that fail validation or hit the honeypot too', async () => {
      const { app, calls } = createMultiClientApp(env);
      await postJson(app, { email: 'not-an-email', optInAttestation: true }, fromIp('192.0.2.1'));
      await postJson(app, { email: EMAIL, optInAttestation: true, website: 'spam' }, fromIp('192.0.2.1'));
      await postJson(app, { email: EMAIL }, fromIp('192.0.2.1'));
      await expectErrorCode(await postJson(app, { email: EMAIL, optInAttestation: true }, fromIp('192.0.2.1')), 429, 'RATE_LIMITED');
      expect(calls).toHaveLength(0);
    });

    it('ignores a spoofed X-Forwarded-For when no proxy hop is trusted', async () => {
      const { app, calls } = createMultiClientApp(env);
      for (let attempt = 1; attempt <= 4; attempt += 1) {
        const response = await postJson(
          app,
          { email: `reader${attempt}@example.com`, optInAttestation: true },
          { ...fromIp('192.0.2.1'), 'X-Forwarded-For': `10.0.0.${attempt}` },
        );
        if (attempt === 4) await expectErrorCode(response, 429, 'RATE_LIMITED');
      }
      expect(calls).toHaveLength(3);
    });

    it('with one trusted hop limits by the right-most X-Forwarded-For entry, not the spoofable left end', async () => {
      const { app, calls } = createMultiClientApp({ ...env, TRUST_PROXY_HOPS: '1' });
      const proxy = fromIp('10.0.0.1');
      for (let attempt = 1; attempt <= 4; attempt += 1) {
        const response = await postJson(
          app,
          { email: `reader${attempt}@example.com`, optInAttestation: true },
          { ...proxy, 'X-Forwarded-For': `198.18.0.${attempt}, 192.0.2.1` },
        );
        if (attempt === 4) await expectErrorCode(response, 429, 'RATE_LIMITED');
      }
      // Another visitor behind the same proxy is a different client.
      await expectAccepted(
        await postJson(app, { email: 'neighbour@example.com', optInAttestation: true }, { ...proxy, 'X-Forwarded-For': '192.0.2.2' }),
      );
      expect(calls).toHaveLength(4);
    });
  });

  describe('origin', () => {
    const env = { ALLOWED_ORIGINS: 'https://site.example' };

    it('returns 403 FORBIDDEN_ORIGIN and makes no upstream call for a JSON post from a foreign Origin', async () => {
      const { app, calls } = createSubscribeApp({ env });
      const response = await postJson(app, { email: EMAIL, optInAttestation: true }, { Origin: 'https://evil.example' });
      await expectErrorCode(response, 403, 'FORBIDDEN_ORIGIN');
      expect(calls).toHaveLength(0);
    });

    it('returns 403 FORBIDDEN_ORIGIN and makes no upstream call for an urlencoded form post from a foreign Origin', async () => {
      const { app, calls } = createSubscribeApp({ env: { ...env, SUBSCRIBE_REDIRECT_URL: REDIRECT_URL } });
      const response = await postForm(
        app,
        { email: EMAIL, optInAttestation: 'on' },
        { Origin: 'https://evil.example', Accept: BROWSER_ACCEPT },
      );
      await expectErrorCode(response, 403, 'FORBIDDEN_ORIGIN');
      expect(calls).toHaveLength(0);
    });

    it('returns 403 for the opaque Origin "null" (sandboxed frames, file: pages)', async () => {
      const { app, calls } = createSubscribeApp({ env });
      await expectErrorCode(await postJson(app, { email: EMAIL, optInAttestation: true }, { Origin: 'null' }), 403, 'FORBIDDEN_ORIGIN');
      expect(calls).toHaveLength(0);
    });

    it('accepts a post from an allowed Origin', async () => {
      const { app, calls } = createSubscribeApp({ env });
      await expectAccepted(await postJson(app, { email: EMAIL, optInAttestation: true }, { Origin: 'https://site.example' }));
      expect(calls).toHaveLength(1);
    });

    it('accepts a post with no Origin (server-side callers)', async () => {
      const { app, calls } = createSubscribeApp({ env });
      await expectAccepted(await postJson(app, { email: EMAIL, optInAttestation: true }));
      expect(calls).toHaveLength(1);
    });

    it("accepts a post from the service's own origin", async () => {
      const { app, calls } = createSubscribeApp({ env });
      await expectAccepted(await postJson(app, { email: EMAIL, optInAttestation: true }, { Origin: 'http://localhost' }));
      expect(calls).toHaveLength(1);
    });
  });

  describe('CORS preflight', () => {
    function preflight(app: TestApp, origin: string): Promise<Response> {
      return Promise.resolve(
        app.request(PATH, {
          method: 'OPTIONS',
          headers: { Origin: origin, 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'content-type' },
        }),
      );
    }

    it('grants a preflight for POST from an allowed origin: 204, the origin echoed, Content-Type allowed', async () => {
      const { app, calls } = createSubscribeApp({ env: { ALLOWED_ORIGINS: 'https://site.example' } });
      const response = await preflight(app, 'https://site.example');
      expect(response.status).toBe(204);
      expect(response.headers.get('access-control-allow-origin')).toBe('https://site.example');
      expect(response.headers.get('access-control-allow-methods')?.split(/\s*,\s*/)).toContain('POST');
      expect(response.headers.get('access-control-allow-headers')?.toLowerCase().split(/\s*,\s*/)).toContain('content-type');
      expect(response.headers.get('vary')).toMatch(/\bOrigin\b/);
      expect(calls).toHaveLength(0);
    });

    it('grants nothing to a preflight from a foreign origin', async () => {
      const { app, calls } = createSubscribeApp({ env: { ALLOWED_ORIGINS: 'https://site.example' } });
      const response = await preflight(app, 'https://evil.example');
      expect(response.headers.get('access-control-allow-origin')).toBeNull();
      expect(response.headers.get('access-control-allow-credentials')).toBeNull();
      expect(calls).toHaveLength(0);
    });
  });

  describe('forms without JavaScript', () => {
    const redirectEnv = { SUBSCRIBE_REDIRECT_URL: REDIRECT_URL };

    it('redirects a successful form post with 303 to SUBSCRIBE_REDIRECT_URL with ?subscribed=1', async () => {
      const { app, calls } = createSubscribeApp({ env: redirectEnv });
      const response = await postForm(app, { email: EMAIL, optInAttestation: 'on' }, { Accept: BROWSER_ACCEPT });
      const location = expectRedirect(response);
      expect(location.href).toBe(`${REDIRECT_URL}?subscribed=1#subscribed`);
      expect(calls).toHaveLength(1);
    });

    it('redirects a multipart form post too', async () => {
      const { app, calls } = createSubscribeApp({ env: redirectEnv });
      const response = await postMultipart(app, { email: EMAIL, optInAttestation: 'on' }, { Accept: BROWSER_ACCEPT });
      expect(expectRedirect(response).href).toBe(`${REDIRECT_URL}?subscribed=1#subscribed`);
      expect(calls).toHaveLength(1);
    });

    it('keeps the query parameters of the redirect URL and replaces an existing subscribed or subscribe_error', async () => {
      const { app } = createSubscribeApp({
        env: { SUBSCRIBE_REDIRECT_URL: 'https://site.example/thanks?lang=en&subscribed=0&subscribe_error=OLD' },
      });
      const response = await postForm(app, { email: EMAIL, optInAttestation: 'on' }, { Accept: BROWSER_ACCEPT });
      const location = expectRedirect(response);
      expect(location.origin + location.pathname).toBe('https://site.example/thanks');
      expect(location.searchParams.get('lang')).toBe('en');
      expect(location.searchParams.getAll('subscribed')).toEqual(['1']);
      expect(location.searchParams.has('subscribe_error')).toBe(false);
    });

    it('redirects a form post without the attestation to ?subscribe_error=VALIDATION_ERROR and makes no upstream call', async () => {
      const { app, calls } = createSubscribeApp({ env: { SUBSCRIBE_REDIRECT_URL: `${REDIRECT_URL}?subscribed=1` } });
      const response = await postForm(app, { email: EMAIL }, { Accept: BROWSER_ACCEPT });
      const location = expectRedirect(response);
      expect(location.searchParams.get('subscribe_error')).toBe('VALIDATION_ERROR');
      expect(location.searchParams.has('subscribed')).toBe(false);
      expect(location.hash).toBe('#subscribe-error');
      expect(calls).toHaveLength(0);
    });

    it('keeps a fragment of the configured redirect URL instead of adding its own', async () => {
      const { app } = createSubscribeApp({ env: { SUBSCRIBE_REDIRECT_URL: 'https://site.example/thanks#newsletter' } });
      const response = await postForm(app, { email: EMAIL, optInAttestation: 'on' }, { Accept: BROWSER_ACCEPT });
      expect(expectRedirect(response).href).toBe('https://site.example/thanks?subscribed=1#newsletter');
    });

    it('redirects a rate-limited form post to ?subscribe_error=RATE_LIMITED', async () => {
      const { app, calls } = createSubscribeApp({ env: { ...redirectEnv, SUBSCRIBE_RATE_LIMIT_PER_MINUTE: '1' } });
      expectRedirect(await postForm(app, { email: EMAIL, optInAttestation: 'on' }, { Accept: BROWSER_ACCEPT }));
      const response = await postForm(app, { email: 'other@example.com', optInAttestation: 'on' }, { Accept: BROWSER_ACCEPT });
      expect(expectRedirect(response).searchParams.get('subscribe_error')).toBe('RATE_LIMITED');
      expect(calls).toHaveLength(1);
    });

    it('redirects a form post the upstream cannot take to ?subscribe_error=UPSTREAM_ERROR', async () => {
      const { app } = createSubscribeApp({
        env: redirectEnv,
        handler: () => upstreamFailure(401, 'UNAUTHORIZED', 'API key missing or invalid'),
      });
      const response = await postForm(app, { email: EMAIL, optInAttestation: 'on' }, { Accept: BROWSER_ACCEPT });
      expect(expectRedirect(response).searchParams.get('subscribe_error')).toBe('UPSTREAM_ERROR');
    });

    it('redirects a form post that the upstream answers 404 to ?subscribe_error=UPSTREAM_ERROR', async () => {
      const { app, calls } = createSubscribeApp({
        env: redirectEnv,
        handler: () => upstreamFailure(404, 'NOT_FOUND', 'no such route'),
      });
      const response = await postForm(app, { email: EMAIL, optInAttestation: 'on' }, { Accept: BROWSER_ACCEPT });
      const location = expectRedirect(response);
      expect(location.searchParams.get('subscribe_error')).toBe('UPSTREAM_ERROR');
      expect(location.searchParams.has('subscribed')).toBe(false);
      expect(calls).toHaveLength(1);
    });

    it('redirects an oversized form post to ?subscribe_error=PAYLOAD_TOO_LARGE with no upstream call', async () => {
      const { app, calls } = createSubscribeApp({ env: redirectEnv });
      const response = await postForm(
        app,
        { email: EMAIL, optInAttestation: 'on', padding: 'x'.repeat(9000) },
        { Accept: BROWSER_ACCEPT },
      );
      expect(expectRedirect(response).searchParams.get('subscribe_error')).toBe('PAYLOAD_TOO_LARGE');
      expect(calls).toHaveLength(0);
    });

    it('redirects to the Referer when no redirect URL is configured and its origin is allowed', async () => {
      const { app } = createSubscribeApp();
      const response = await postForm(
        app,
        { email: EMAIL, optInAttestation: 'on' },
        { Accept: BROWSER_ACCEPT, Referer: 'https://site.example/newsletter?ref=home' },
      );
      expect(expectRedirect(response).href).toBe('https://site.example/newsletter?ref=home&subscribed=1#subscribed');
    });

    it('does not redirect to a Referer whose origin is foreign, and answers JSON instead', async () => {
      const { app, calls } = createSubscribeApp();
      const response = await postForm(
        app,
        { email: EMAIL, optInAttestation: 'on' },
        { Accept: BROWSER_ACCEPT, Referer: 'https://evil.example/phish' },
      );
      await expectAccepted(response);
      expect(calls).toHaveLength(1);
    });

    it('never honours a next or returnTo field pointing to another host', async () => {
      const { app } = createSubscribeApp({ env: redirectEnv });
      const response = await postForm(
        app,
        { email: EMAIL, optInAttestation: 'on', next: 'https://evil.example/a', returnTo: 'https://evil.example/b' },
        { Accept: BROWSER_ACCEPT, Referer: 'https://site.example/newsletter' },
      );
      expect(expectRedirect(response).href).toBe(`${REDIRECT_URL}?subscribed=1#subscribed`);
    });

    it('never honours a next or returnTo query parameter pointing to another host', async () => {
      const { app } = createSubscribeApp({ env: redirectEnv });
      const response = await postForm(
        app,
        { email: EMAIL, optInAttestation: 'on' },
        { Accept: BROWSER_ACCEPT },
        `${PATH}?next=${encodeURIComponent('https://evil.example/a')}&returnTo=${encodeURIComponent('//evil.example/b')}`,
      );
      expect(expectRedirect(response).href).toBe(`${REDIRECT_URL}?subscribed=1#subscribed`);
    });

    it('answers JSON, not a redirect, to next/returnTo when neither a redirect URL nor an allowed Referer exists', async () => {
      const { app } = createSubscribeApp();
      const response = await postForm(
        app,
        { email: EMAIL, optInAttestation: 'on', next: 'https://evil.example/a', returnTo: 'https://evil.example/b' },
        { Accept: BROWSER_ACCEPT },
        `${PATH}?next=${encodeURIComponent('https://evil.example/c')}`,
      );
      await expectAccepted(response);
    });

    it('answers JSON, not a redirect, to a form post with Accept: application/json', async () => {
      const { app, calls } = createSubscribeApp({ env: redirectEnv });
      const response = await postForm(app, { email: EMAIL, optInAttestation: 'on' }, { Accept: 'application/json' });
      await expectAccepted(response);
      expect(calls).toHaveLength(1);
    });

    it('answers a JSON post with JSON even when it accepts text/html', async () => {
      const { app } = createSubscribeApp({ env: redirectEnv });
      await expectAccepted(await postJson(app, { email: EMAIL, optInAttestation: true }, { Accept: BROWSER_ACCEPT }));
    });

    it.each([
      { label: '200', send: (app: TestApp) => postJson(app, { email: EMAIL, optInAttestation: true }) },
      { label: '303', send: (app: TestApp) => postForm(app, { email: EMAIL, optInAttestation: 'on' }, { Accept: BROWSER_ACCEPT }) },
      { label: '403', send: (app: TestApp) => postJson(app, {}, { Origin: 'https://evil.example' }) },
      { label: '413', send: (app: TestApp) => postChunked(app, 'x'.repeat(9000)) },
      {
        label: '415',
        send: (app: TestApp) => Promise.resolve(app.request(PATH, { method: 'POST', headers: { 'Content-Type': 'text/plain' }, body: 'x' })),
      },
      { label: '422', send: (app: TestApp) => postJson(app, { email: EMAIL }) },
    ].map((entry) => [entry.label, entry] as const))('marks a %s subscribe response Cache-Control: no-store', async (label, { send }) => {
      const { app } = createSubscribeApp({ env: redirectEnv });
      const response = await send(app);
      expect(String(response.status)).toBe(label);
      expect(response.headers.get('cache-control')).toBe('no-store');
    });
  });

  describe('logging', () => {
    it('logs one forwarded line with the masked email', async () => {
      const { app, logs } = createSubscribeApp();
      await postJson(app, { email: EMAIL, optInAttestation: true });
      expect(subscribeLogLines(logs)).toEqual([expect.objectContaining({ outcome: 'forwarded', email: MASKED_EMAIL })]);
    });

    it('logs one deduped line for the same address again', async () => {
      const { app, logs } = createSubscribeApp();
      await postJson(app, { email: EMAIL, optInAttestation: true });
      await postJson(app, { email: EMAIL, optInAttestation: true });
      expect(subscribeLogLines(logs).map((entry) => [entry.outcome, entry.email])).toEqual([
        ['forwarded', MASKED_EMAIL],
        ['deduped', MASKED_EMAIL],
      ]);
    });

    it('logs one honeypot line for a filled honeypot', async () => {
      const { app, logs } = createSubscribeApp();
      await postJson(app, { email: EMAIL, optInAttestation: true, website: 'spam' });
      expect(subscribeLogLines(logs)).toEqual([expect.objectContaining({ outcome: 'honeypot' })]);
    });

    it("logs one refused_by_upstream line with the upstream's status and code", async () => {
      const { app, logs } = createSubscribeApp({
        handler: () => upstreamFailure(409, 'SUBSCRIBER_BLOCKED', `Subscriber ${EMAIL} is blocked`),
      });
      await postJson(app, { email: EMAIL, optInAttestation: true });
      expect(subscribeLogLines(logs)).toEqual([
        expect.objectContaining({ outcome: 'refused_by_upstream', email: MASKED_EMAIL, upstreamStatus: '409', upstreamCode: 'SUBSCRIBER_BLOCKED' }),
      ]);
    });

    it('logs one rejected line for a rate-limited attempt', async () => {
      const { app, logs } = createSubscribeApp({ env: { SUBSCRIBE_RATE_LIMIT_PER_MINUTE: '1' } });
      await postJson(app, { email: EMAIL, optInAttestation: true });
      await postJson(app, { email: 'other@example.com', optInAttestation: true });
      expect(subscribeLogLines(logs).map((entry) => [entry.outcome, entry.reason])).toEqual([
        ['forwarded', undefined],
        ['rejected', 'RATE_LIMITED'],
      ]);
    });

    it('never writes the raw email or the API key in any log line, whatever the outcome', async () => {
      let upstreamStatus = 201;
      const { app, logs } = createSubscribeApp({
        env: { SUBSCRIBE_RATE_LIMIT_PER_MINUTE: '100' },
        handler: (call, index) =>
          upstreamStatus === 201
            ? subscriberCreated(call, index)
            : upstreamFailure(upstreamStatus, 'SOMETHING', `About ${EMAIL}: key ${TEST_API_KEY}`),
      });
      await postJson(app, { email: EMAIL, optInAttestation: true });
      await postJson(app, { email: EMAIL, optInAttestation: true });
      await postJson(app, { email: EMAIL, optInAttestation: true, website: 'spam' });
      for (const status of [409, 422, 401, 500]) {
        upstreamStatus = status;
        await postJson(app, { email: `${status}-${EMAIL}`, optInAttestation: true });
      }
      await postJson(app, { email: 'not-an-email', optInAttestation: true });
      expect(subscribeLogLines(logs).length).toBeGreaterThanOrEqual(7);
      for (const line of logs.lines) {
        expect(line).not.toContain(EMAIL);
        expect(line).not.toContain(TEST_API_KEY);
      }
    });

    it('never puts the API key in a response body or header, whatever the outcome', async () => {
      let upstreamStatus = 201;
      const { app } = createSubscribeApp({
        env: { SUBSCRIBE_REDIRECT_URL: REDIRECT_URL, SUBSCRIBE_RATE_LIMIT_PER_MINUTE: '100' },
        handler: (call, index) =>
          upstreamStatus === 201
            ? subscriberCreated(call, index)
            : upstreamFailure(upstreamStatus, 'SOMETHING', `Bad key ${TEST_API_KEY}`, { 'X-Echo-Key': TEST_API_KEY }),
      });
      const responses: Response[] = [];
      responses.push(await postJson(app, { email: EMAIL, optInAttestation: true }));
      responses.push(await postForm(app, { email: 'form@example.com', optInAttestation: 'on' }, { Accept: BROWSER_ACCEPT }));
      for (const status of [401, 409, 422, 500, 429]) {
        upstreamStatus = status;
        responses.push(await postJson(app, { email: `${status}@example.com`, optInAttestation: true }));
      }
      expect(responses.map((response) => response.status)).toEqual([200, 303, 502, 200, 422, 502, 503]);
      for (const response of responses) {
        expect(await response.text()).not.toContain(TEST_API_KEY);
        for (const [, value] of response.headers) expect(value).not.toContain(TEST_API_KEY);
      }
    });
  });

  describe('method', () => {
    it.each(['GET', 'PUT', 'DELETE'])('answers %s /api/subscribe with 405 and an Allow header that includes POST', async (method) => {
      const { app, calls } = createSubscribeApp();
      const response = await app.request(PATH, { method });
      expect(response.status).toBe(405);
      expect(response.headers.get('allow')?.split(/,\s*/)).toContain('POST');
      expect(await response.json()).toMatchObject({ ok: false, error: { code: 'METHOD_NOT_ALLOWED' } });
      expect(calls).toHaveLength(0);
    });
  });
});
