import { describe, expect, it } from 'vitest';
import { DEMO_BLOCKED_EMAIL, createDemoUpstream } from '../../src/demo/upstream.js';
import { TEST_API_KEY, createFakeClock, createScriptedFetch, createTestApp, jsonResponse } from '../helpers.js';
import {
  SUCCESS_BODY,
  EMAIL,
  MASKED_EMAIL,
  subscriberCreated,
  upstreamFailure,
  createSubscribeApp,
  postJson,
  forwardedBody,
  subscribeLogLines,
  expectValidationError,
  expectErrorCode,
  expectAccepted,
} from './support.js';

// docs/contract.md "POST /api/subscribe": no enumeration: how each upstream answer to Create Subscriber is answered to the visitor.

describe('POST /api/subscribe', () => {
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
      expect(calls.map((call) => (JSON.parse(call.body ?? '{}') as { email: string }).email)).toEqual([EMAIL, 'refused@example.com']);
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
    ])('answers 200 with the success body when the upstream refuses the address with $status $code', async ({ status, code }) => {
      const { app, calls } = createSubscribeApp({
        handler: () => upstreamFailure(status, code, `Subscriber ${EMAIL} cannot be subscribed: it is ${code}`),
      });
      await expectAccepted(await postJson(app, { email: EMAIL, optInAttestation: true }));
      expect(calls).toHaveLength(1);
    });

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
      const upstream = createScriptedFetch((call) => demo.fetch(call.url, { method: call.method, headers: call.headers, body: call.body }));
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
              error: {
                code: 'VALIDATION_ERROR',
                message: upstreamMessage,
                details: [{ path: 'email', message: 'Disposable domain rejected' }],
              },
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
});
