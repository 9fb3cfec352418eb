import { createServer, type Server, type ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { TURNSTILE_RESPONSE_FIELD } from '../../src/core/subscribe/guards.js';
import { closeServer, createScriptedFetch, createTestApp } from '../helpers.js';
import {
  BROWSER_ACCEPT,
  EMAIL,
  REDIRECT_URL,
  expectAccepted,
  expectErrorCode,
  expectRedirect,
  postForm,
  postJson,
  subscriberCreated,
} from './support.js';

// docs/contract.md "POST /api/subscribe": the Turnstile check, against a fake siteverify on loopback.

const SECRET = '0x4AAAAAAA-fake-turnstile-secret';
const VISITOR_IP = '203.0.113.7';

type Behaviour = 'answer' | 'hold' | 'fail' | 'bad-secret';
interface Verification {
  secret: string | null;
  response: string | null;
  remoteip: string | null;
}

const servers: Server[] = [];
const held: ServerResponse[] = [];

afterEach(async () => {
  for (const response of held.splice(0)) response.destroy();
  for (const server of servers.splice(0)) await closeServer(server);
});

/**
 * A siteverify that passes tokens starting with `pass-`, once each (a reused one is
 * `timeout-or-duplicate`, as Cloudflare answers), and rejects the rest.
 */
async function startVerifier(behaviour: Behaviour = 'answer') {
  const verifications: Verification[] = [];
  const spent = new Set<string>();
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      const form = new URLSearchParams(body);
      verifications.push({ secret: form.get('secret'), response: form.get('response'), remoteip: form.get('remoteip') });
      if (behaviour === 'hold') return void held.push(res);
      if (behaviour === 'fail') return void res.writeHead(500).end();
      const token = form.get('response') ?? '';
      let answer: { success: boolean; 'error-codes': string[] };
      if (behaviour === 'bad-secret') answer = { success: false, 'error-codes': ['invalid-input-secret'] };
      else if (spent.has(token)) answer = { success: false, 'error-codes': ['timeout-or-duplicate'] };
      else if (token.startsWith('pass-')) answer = { success: true, 'error-codes': [] };
      else answer = { success: false, 'error-codes': ['invalid-input-response'] };
      spent.add(token);
      res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(answer));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(server);
  const port = (server.address() as { port: number }).port;
  return { url: `http://127.0.0.1:${port}/siteverify`, verifications };
}

/** The app with Turnstile on, over a scripted upstream whose calls are recorded. */
function createChallengedApp(verifyUrl: string, env: Record<string, string> = {}, timeoutMs = 5000) {
  const upstream = createScriptedFetch(subscriberCreated);
  const test = createTestApp({
    fetch: upstream.fetch,
    env: { TURNSTILE_SECRET_KEY: SECRET, TURNSTILE_VERIFY_URL: verifyUrl, ...env },
    clientIp: VISITOR_IP,
    turnstile: { timeoutMs },
  });
  const subscribeLines = () => test.logs.entries().filter((entry) => entry.event === 'subscribe');
  return { ...test, calls: upstream.calls, subscribeLines };
}

const subscription = (token?: string, email = EMAIL) => ({
  email,
  optInAttestation: true,
  ...(token === undefined ? {} : { [TURNSTILE_RESPONSE_FIELD]: token }),
});

describe('POST /api/subscribe with Turnstile', () => {
  it('verifies the token with the secret and the visitor’s IP, then subscribes', async () => {
    const verifier = await startVerifier();
    const { app, calls } = createChallengedApp(verifier.url);
    await expectAccepted(await postJson(app, subscription('pass-1')));
    expect(verifier.verifications).toEqual([{ secret: SECRET, response: 'pass-1', remoteip: VISITOR_IP }]);
    expect(calls).toHaveLength(1);
  });

  it('reads the token from a form field too', async () => {
    const verifier = await startVerifier();
    const { app, calls } = createChallengedApp(verifier.url);
    const fields = { email: EMAIL, optInAttestation: 'on', [TURNSTILE_RESPONSE_FIELD]: 'pass-form' };
    await expectAccepted(await postForm(app, fields, { Accept: 'application/json' }));
    expect(calls).toHaveLength(1);
  });

  it.each([
    ['no token', undefined],
    ['an empty token', '  '],
  ])('answers %s with 403 CAPTCHA_REQUIRED and the site key, without asking the verifier or the upstream', async (_label, token) => {
    const verifier = await startVerifier();
    const { app, calls, subscribeLines } = createChallengedApp(verifier.url, { TURNSTILE_SITE_KEY: '1x00000000000000000000AA' });
    const response = await postJson(app, subscription(token));
    expect(response.status).toBe(403);
    expect(await response.json()).toEqual({
      ok: false,
      error: {
        code: 'CAPTCHA_REQUIRED',
        message: expect.any(String),
        details: [{ path: TURNSTILE_RESPONSE_FIELD, message: expect.any(String), siteKey: '1x00000000000000000000AA' }],
      },
    });
    expect(verifier.verifications).toHaveLength(0);
    expect(calls).toHaveLength(0);
    expect(subscribeLines()).toEqual([expect.objectContaining({ outcome: 'rejected', reason: 'CAPTCHA_REQUIRED', captcha: 'missing' })]);
  });

  it('answers a token longer than Turnstile issues with 403 CAPTCHA_FAILED without asking the verifier or the upstream', async () => {
    const verifier = await startVerifier();
    const { app, calls, subscribeLines } = createChallengedApp(verifier.url);
    await expectErrorCode(await postJson(app, subscription(`pass-${'x'.repeat(2048)}`)), 403, 'CAPTCHA_FAILED');
    expect(verifier.verifications).toHaveLength(0);
    expect(calls).toHaveLength(0);
    expect(subscribeLines()).toEqual([expect.objectContaining({ outcome: 'rejected', reason: 'CAPTCHA_FAILED', captcha: 'malformed' })]);
  });

  it('answers a token the verifier rejects with 403 CAPTCHA_FAILED and nothing upstream', async () => {
    const verifier = await startVerifier();
    const { app, calls, subscribeLines } = createChallengedApp(verifier.url);
    await expectErrorCode(await postJson(app, subscription('forged')), 403, 'CAPTCHA_FAILED');
    expect(calls).toHaveLength(0);
    expect(subscribeLines()).toEqual([expect.objectContaining({ reason: 'CAPTCHA_FAILED', captcha: 'invalid-input-response' })]);
  });

  it('answers a reused token (timeout-or-duplicate) with 403 and makes no second upstream call', async () => {
    const verifier = await startVerifier();
    const { app, calls, subscribeLines } = createChallengedApp(verifier.url);
    await expectAccepted(await postJson(app, subscription('pass-once')));
    await expectErrorCode(await postJson(app, subscription('pass-once', 'other@example.com')), 403, 'CAPTCHA_FAILED');
    expect(calls).toHaveLength(1);
    expect(subscribeLines()[1]).toMatchObject({ reason: 'CAPTCHA_FAILED', captcha: 'timeout-or-duplicate' });
  });

  it('sends a form post without a valid token back with ?subscribe_error=CAPTCHA_FAILED', async () => {
    const verifier = await startVerifier();
    const { app, calls } = createChallengedApp(verifier.url, { SUBSCRIBE_REDIRECT_URL: REDIRECT_URL });
    const response = await postForm(
      app,
      { email: EMAIL, optInAttestation: 'on', [TURNSTILE_RESPONSE_FIELD]: 'forged' },
      { Accept: BROWSER_ACCEPT },
    );
    expect(expectRedirect(response).searchParams.get('subscribe_error')).toBe('CAPTCHA_FAILED');
    expect(calls).toHaveLength(0);
  });

  it.each([
    ['slower than the timeout', 'hold', 'timeout', 'warn'],
    ['answering 500', 'fail', 'status 500', 'warn'],
    ['refusing our secret', 'bad-secret', 'invalid-input-secret', 'error'],
  ] as const)('fails closed with 503 and a log line when the verifier is %s', async (_label, behaviour, reason, level) => {
    const verifier = await startVerifier(behaviour);
    // A short timeout here, so the silent verifier is given up on quickly; the others answer at once.
    const { app, calls, subscribeLines, logs } = createChallengedApp(verifier.url, {}, 200);
    const response = await postJson(app, subscription('pass-1'));
    expect(response.headers.get('retry-after')).toBe('5');
    await expectErrorCode(response, 503, 'UPSTREAM_UNAVAILABLE');
    expect(calls).toHaveLength(0);
    expect(subscribeLines()).toEqual([
      expect.objectContaining({ outcome: 'failed', reason: 'CAPTCHA_UNAVAILABLE', captcha: reason, level }),
    ]);
    expect(logs.lines.join('\n')).not.toContain(SECRET);
  });

  it('fails closed with 503 when the verifier cannot be reached', async () => {
    const verifier = await startVerifier();
    const unreachable = verifier.url;
    await new Promise<void>((resolve) => servers.pop()!.close(() => resolve()));
    const { app, calls } = createChallengedApp(unreachable);
    await expectErrorCode(await postJson(app, subscription('pass-1')), 503, 'UPSTREAM_UNAVAILABLE');
    expect(calls).toHaveLength(0);
  });

  it('runs the honeypot, rate limit, origin and validation checks first, spending no token on them', async () => {
    const verifier = await startVerifier();
    const { app, calls } = createChallengedApp(verifier.url, {
      SUBSCRIBE_RATE_LIMIT_PER_MINUTE: '3',
      ALLOWED_ORIGINS: 'https://site.example',
    });
    await expectAccepted(await postJson(app, { ...subscription('pass-1'), website: 'spam' }));
    await expectErrorCode(await postJson(app, subscription('pass-2'), { Origin: 'https://evil.example' }), 403, 'FORBIDDEN_ORIGIN');
    await expectErrorCode(await postJson(app, { ...subscription('pass-3'), email: 'nope' }), 422, 'VALIDATION_ERROR');
    await expectAccepted(await postJson(app, subscription('pass-4')));
    await expectErrorCode(await postJson(app, subscription('pass-5')), 429, 'RATE_LIMITED');
    expect(verifier.verifications.map((verification) => verification.response)).toEqual(['pass-4']);
    expect(calls).toHaveLength(1);
  });

  it('asks for no token when TURNSTILE_SECRET_KEY is unset', async () => {
    const upstream = createScriptedFetch(subscriberCreated);
    const { app } = createTestApp({ fetch: upstream.fetch });
    await expectAccepted(await postJson(app, subscription()));
    expect(upstream.calls).toHaveLength(1);
  });
});
