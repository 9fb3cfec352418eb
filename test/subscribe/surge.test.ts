import { describe, expect, it } from 'vitest';
import { TURNSTILE_RESPONSE_FIELD } from '../../src/core/subscribe/guards.js';
import { jsonResponse } from '../helpers.js';
import { createMetricsRecorder } from '../metrics-recorder.js';
import {
  BROWSER_ACCEPT,
  REDIRECT_URL,
  createSubscribeApp,
  expectAccepted,
  expectRedirect,
  postForm,
  postJson,
  subscribeLogLines,
} from './support.js';

// docs/subscribe.md "Surges": the service-wide count, its start, hold and end on the fake clock,
// and what a surge does with and without Turnstile. Runs on Node and in workerd; the alert
// webhook and /metrics, which need Node, are in surge-alerts.test.ts.

const THRESHOLD = 5;
const HOLD_SECONDS = 120;
const SITE_KEY = '1x00000000000000000000AA';
/** A tight surge threshold, and a per-IP limit out of the way (every post here comes from one IP). */
const SURGE_ENV = {
  SUBSCRIBE_SURGE_PER_MINUTE: String(THRESHOLD),
  SUBSCRIBE_SURGE_SECONDS: String(HOLD_SECONDS),
  SUBSCRIBE_RATE_LIMIT_PER_MINUTE: '10000',
};
const TURNSTILE_ENV = {
  TURNSTILE_SECRET_KEY: '0x4AAAAAAA-fake-turnstile-secret',
  TURNSTILE_SITE_KEY: SITE_KEY,
  TURNSTILE_VERIFY_URL: 'https://verify.test/siteverify',
};

const subscription = (n: number, token?: string) => ({
  email: `person${n}@domain${n % 3}.example`,
  optInAttestation: true,
  ...(token === undefined ? {} : { [TURNSTILE_RESPONSE_FIELD]: token }),
});

/** A siteverify that passes tokens starting with `pass-` (Turnstile's answer shape), counting checks. */
function fakeSiteverify() {
  const checked: string[] = [];
  const fetch: typeof globalThis.fetch = async (_input, init) => {
    const token = new URLSearchParams(String(init?.body)).get('response') ?? '';
    checked.push(token);
    return jsonResponse(
      token.startsWith('pass-') ? { success: true, 'error-codes': [] } : { success: false, 'error-codes': ['invalid-input-response'] },
    );
  };
  return { fetch, checked };
}

const surgeLines = (logs: { entries: () => Record<string, unknown>[] }) =>
  logs.entries().filter((entry) => typeof entry.event === 'string' && entry.event.startsWith('subscribe_surge'));

async function postMany(app: Parameters<typeof postJson>[0], from: number, count: number, token?: string) {
  const statuses: number[] = [];
  for (let n = from; n < from + count; n += 1) statuses.push((await postJson(app, subscription(n, token))).status);
  return statuses;
}

describe('subscribe surges without Turnstile: new addresses are paused', () => {
  it('forwards up to the threshold, then pauses with 503 and Retry-After, forwarding nothing more', async () => {
    const { app, calls, logs } = createSubscribeApp({ env: SURGE_ENV });
    expect(await postMany(app, 0, THRESHOLD)).toEqual(Array(THRESHOLD).fill(200));
    const paused = await postJson(app, subscription(THRESHOLD));
    expect(paused.status).toBe(503);
    expect(paused.headers.get('retry-after')).toBe(String(HOLD_SECONDS));
    expect(await paused.json()).toMatchObject({ ok: false, error: { code: 'UPSTREAM_UNAVAILABLE' } });
    expect(await postMany(app, 100, 20)).toEqual(Array(20).fill(503));
    expect(calls).toHaveLength(THRESHOLD);
    expect(surgeLines(logs)).toEqual([
      expect.objectContaining({
        level: 'warn',
        event: 'subscribe_surge_started',
        ratePerMinute: THRESHOLD + 1,
        thresholdPerMinute: THRESHOLD,
        distinctIps: 1,
        distinctDomains: 3,
        distinctAddresses: THRESHOLD + 1,
        response: 'pause',
      }),
    ]);
    expect(subscribeLogLines(logs).filter((line) => line.outcome === 'paused')).toHaveLength(21);
  });

  it('names in its start line the variables that would challenge instead of pausing', async () => {
    const { app, logs } = createSubscribeApp({ env: SURGE_ENV });
    await postMany(app, 0, THRESHOLD + 1);
    expect(surgeLines(logs)[0]?.hint).toBe(
      'new addresses are paused (503) until the rate stays low; set TURNSTILE_SECRET_KEY and TURNSTILE_SITE_KEY to challenge instead',
    );
  });

  it('holds the surge until the rate has stayed below the threshold for SUBSCRIBE_SURGE_SECONDS, then ends it with one line', async () => {
    const { app, calls, logs, clock } = createSubscribeApp({ env: SURGE_ENV });
    await postMany(app, 0, THRESHOLD + 1);
    // Two minutes on, the rate is 0, but the hold is counted from the last minute above the threshold.
    clock.advance(HOLD_SECONDS * 1000 - 1000);
    expect((await postJson(app, subscription(50))).status).toBe(503);
    clock.advance(1000);
    await expectAccepted(await postJson(app, subscription(51)));
    expect(calls).toHaveLength(THRESHOLD + 1);
    expect(surgeLines(logs).map((line) => line.event)).toEqual(['subscribe_surge_started', 'subscribe_surge_ended']);
    expect(surgeLines(logs)[1]).toMatchObject({
      level: 'warn',
      durationSeconds: HOLD_SECONDS,
      paused: 2,
      challenged: 0,
      response: 'pause',
    });
  });

  it('keeps the surge on while the flood goes on past the hold', async () => {
    const { app, calls, clock } = createSubscribeApp({ env: SURGE_ENV });
    await postMany(app, 0, THRESHOLD + 1);
    // 10 attempts a minute for four minutes: twice the threshold the whole time.
    for (let minute = 0; minute < 4; minute += 1) {
      for (let n = 0; n < 10; n += 1) {
        clock.advance(6000);
        expect((await postJson(app, subscription(1000 + minute * 10 + n))).status).toBe(503);
      }
    }
    expect(calls).toHaveLength(THRESHOLD);
  });

  it('ends a surge on a check with no attempt at all, as the Node entry’s timer does', async () => {
    const { app, clock, logs, surge } = createSubscribeApp({ env: SURGE_ENV });
    await postMany(app, 0, THRESHOLD + 1);
    clock.advance(HOLD_SECONDS * 1000);
    await surge?.check(() => undefined);
    expect(surgeLines(logs).map((line) => line.event)).toEqual(['subscribe_surge_started', 'subscribe_surge_ended']);
  });

  it('answers an address it already settled as accepted during a surge, and sends a form back with subscribe_error', async () => {
    const { app, calls } = createSubscribeApp({ env: { ...SURGE_ENV, SUBSCRIBE_REDIRECT_URL: REDIRECT_URL } });
    await postMany(app, 0, THRESHOLD + 1);
    await expectAccepted(await postJson(app, subscription(0)));
    const form = await postForm(app, { email: 'new@form.example', optInAttestation: 'on' }, { Accept: BROWSER_ACCEPT });
    expect(expectRedirect(form).searchParams.get('subscribe_error')).toBe('UPSTREAM_UNAVAILABLE');
    expect(calls).toHaveLength(THRESHOLD);
  });

  it('counts neither invalid posts nor honeypot hits', async () => {
    const { app, calls } = createSubscribeApp({ env: SURGE_ENV });
    for (let n = 0; n < 20; n += 1) await postJson(app, { email: `not-an-address-${n}`, optInAttestation: true });
    for (let n = 0; n < 20; n += 1) await postJson(app, { ...subscription(n), website: 'bot' });
    await expectAccepted(await postJson(app, subscription(500)));
    expect(calls).toHaveLength(1);
  });

  it('is off with SUBSCRIBE_SURGE_PER_MINUTE=0', async () => {
    const { app, calls } = createSubscribeApp({ env: { ...SURGE_ENV, SUBSCRIBE_SURGE_PER_MINUTE: '0' } });
    expect(await postMany(app, 0, 40)).toEqual(Array(40).fill(200));
    expect(calls).toHaveLength(40);
  });
});

describe('subscribe surges with Turnstile', () => {
  it('TURNSTILE_MODE=surge asks for nothing in quiet times, then 403 CAPTCHA_REQUIRED with the site key during a surge', async () => {
    const verifier = fakeSiteverify();
    const { app, calls, logs } = createSubscribeApp({
      env: { ...SURGE_ENV, ...TURNSTILE_ENV, TURNSTILE_MODE: 'surge' },
      turnstile: { fetch: verifier.fetch },
    });
    expect(await postMany(app, 0, THRESHOLD)).toEqual(Array(THRESHOLD).fill(200));
    expect(verifier.checked).toEqual([]);
    const required = await postJson(app, subscription(THRESHOLD));
    expect(required.status).toBe(403);
    expect(await required.json()).toEqual({
      ok: false,
      error: {
        code: 'CAPTCHA_REQUIRED',
        message: expect.any(String),
        details: [{ path: TURNSTILE_RESPONSE_FIELD, message: expect.any(String), siteKey: SITE_KEY }],
      },
    });
    expect(calls).toHaveLength(THRESHOLD);
    // The form renders the widget and resubmits with a token: a real visitor passes.
    await expectAccepted(await postJson(app, subscription(THRESHOLD, 'pass-visitor')));
    expect(calls).toHaveLength(THRESHOLD + 1);
    expect(surgeLines(logs)[0]).toMatchObject({ event: 'subscribe_surge_started', response: 'challenge' });
  });

  it('sends a no-JS form post during a surge back with subscribe_error=CAPTCHA_REQUIRED', async () => {
    const verifier = fakeSiteverify();
    const { app, calls } = createSubscribeApp({
      env: { ...SURGE_ENV, ...TURNSTILE_ENV, TURNSTILE_MODE: 'surge', SUBSCRIBE_REDIRECT_URL: REDIRECT_URL },
      turnstile: { fetch: verifier.fetch },
    });
    await postMany(app, 0, THRESHOLD + 1);
    const response = await postForm(app, { email: 'nojs@form.example', optInAttestation: 'on' }, { Accept: BROWSER_ACCEPT });
    const location = expectRedirect(response);
    expect(location.searchParams.get('subscribe_error')).toBe('CAPTCHA_REQUIRED');
    expect(location.hash).toBe('#subscribe-challenge');
    expect(calls).toHaveLength(THRESHOLD);
  });

  it('TURNSTILE_MODE=always keeps asking every visitor; the end line counts who was challenged', async () => {
    const verifier = fakeSiteverify();
    const { app, calls, logs, clock } = createSubscribeApp({
      env: { ...SURGE_ENV, ...TURNSTILE_ENV },
      turnstile: { fetch: verifier.fetch },
    });
    expect((await postJson(app, subscription(0))).status).toBe(403);
    expect(await postMany(app, 1, THRESHOLD + 2, 'pass-x')).toEqual(Array(THRESHOLD + 2).fill(200));
    // Valid tokens from a bot farm are still a surge: the owner is told, and each one is checked.
    expect(surgeLines(logs)).toEqual([expect.objectContaining({ event: 'subscribe_surge_started', response: 'challenge' })]);
    expect(calls).toHaveLength(THRESHOLD + 2);
    clock.advance(HOLD_SECONDS * 1000);
    await postJson(app, subscription(99, 'pass-y'));
    expect(surgeLines(logs)[1]).toMatchObject({ event: 'subscribe_surge_ended', challenged: 3, paused: 0 });
  });

  it('reports the surge to the metrics hook once at each end', async () => {
    const recorder = createMetricsRecorder();
    const { app, clock } = createSubscribeApp({ env: SURGE_ENV, metrics: recorder.metrics });
    await postMany(app, 0, THRESHOLD + 4);
    clock.advance(HOLD_SECONDS * 1000);
    await postJson(app, subscription(99));
    expect(recorder.of('subscribeSurge')).toEqual([[true], [false]]);
  });
});
