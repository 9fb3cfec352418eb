import { describe, expect, it } from 'vitest';
import { TEST_API_KEY } from '../helpers.js';
import {
  PATH,
  EMAIL,
  MASKED_EMAIL,
  BROWSER_ACCEPT,
  REDIRECT_URL,
  subscriberCreated,
  upstreamFailure,
  createSubscribeApp,
  postJson,
  postForm,
  subscribeLogLines,
  type TestApp,
} from '../subscribe/support.js';

// docs/contract.md "POST /api/subscribe": the route as a whole: preflight, the log line of every outcome, methods.

describe('POST /api/subscribe', () => {
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
      expect(
        response.headers
          .get('access-control-allow-headers')
          ?.toLowerCase()
          .split(/\s*,\s*/),
      ).toContain('content-type');
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
        expect.objectContaining({
          outcome: 'refused_by_upstream',
          email: MASKED_EMAIL,
          upstreamStatus: '409',
          upstreamCode: 'SUBSCRIBER_BLOCKED',
        }),
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
      // A 422 with a code other than VALIDATION_ERROR may be the refusal of an address: a success.
      expect(responses.map((response) => response.status)).toEqual([200, 303, 502, 200, 200, 502, 503]);
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

describe('POST /api/subscribe: one error path', () => {
  it('hands an unexpected error to the app’s handler: a generic 500, one unhandled_error line, no subscribe line', async () => {
    const boom = () => {
      throw new Error('repeat store exploded');
    };
    const { app, calls, logs } = createSubscribeApp({ deps: { repeatGuard: { isRepeat: boom, remember: () => undefined } } });
    const response = await postJson(app, { email: EMAIL, optInAttestation: true });
    expect(response.status).toBe(500);
    expect(await response.json()).toEqual({ ok: false, error: { code: 'INTERNAL_ERROR', message: 'Something went wrong.' } });
    expect(calls).toHaveLength(0);
    expect(logs.entries().filter((line) => line.event === 'unhandled_error')).toEqual([
      expect.objectContaining({ message: 'repeat store exploded' }),
    ]);
    expect(subscribeLogLines(logs)).toEqual([]);
  });

  it('logs each refusal once, whichever step threw it', async () => {
    const { app, logs } = createSubscribeApp({ env: { SUBSCRIBE_REDIRECT_URL: REDIRECT_URL } });
    await postJson(app, { email: 'not an address', optInAttestation: true });
    await postForm(app, { email: EMAIL, optInAttestation: 'no' }, { Accept: BROWSER_ACCEPT });
    await postJson(app, 'x'.repeat(9000));
    expect(subscribeLogLines(logs).map((line) => [line.outcome, line.reason])).toEqual([
      ['rejected', 'VALIDATION_ERROR'],
      ['rejected', 'VALIDATION_ERROR'],
      ['rejected', 'PAYLOAD_TOO_LARGE'],
    ]);
  });
});
