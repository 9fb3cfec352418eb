import { describe, expect, it } from 'vitest';
import { REPEAT_WINDOW_MS, createRepeatGuard, isHoneypotFilled } from '../../src/core/subscribe/guards.js';
import { createFakeClock } from '../helpers.js';
import {
  EMAIL,
  BROWSER_ACCEPT,
  REDIRECT_URL,
  createSubscribeApp,
  createMultiClientApp,
  postJson,
  postForm,
  forwardedBody,
  expectErrorCode,
  expectAccepted,
  expectRedirect,
} from './support.js';

// docs/contract.md "POST /api/subscribe": the abuse guards: honeypot, rate limit and origin.

describe('POST /api/subscribe', () => {
  describe('honeypot', () => {
    it('answers a filled honeypot in JSON with the success body and makes no upstream call', async () => {
      const { app, calls } = createSubscribeApp();
      const response = await postJson(app, { email: EMAIL, optInAttestation: true, website: 'https://spam.example' });
      await expectAccepted(response);
      expect(calls).toHaveLength(0);
    });

    it('answers a filled honeypot in a form post with the success body and makes no upstream call', async () => {
      const { app, calls } = createSubscribeApp();
      const response = await postForm(app, { email: EMAIL, optInAttestation: 'on', website: 'spam' }, { Accept: 'application/json' });
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

    // Filled only by text that is not blank: every other value a client sends for an empty field is a person's subscription.
    const JSON_HONEYPOTS: readonly [string, Record<string, unknown>, 'forwarded' | 'dropped'][] = [
      ['absent', {}, 'forwarded'],
      ['null', { website: null }, 'forwarded'],
      ['""', { website: '' }, 'forwarded'],
      ['whitespace', { website: ' \t\n ' }, 'forwarded'],
      ['false', { website: false }, 'forwarded'],
      ['0', { website: 0 }, 'forwarded'],
      ['"spam"', { website: 'spam' }, 'dropped'],
      ['" x " (text around spaces)', { website: ' x ' }, 'dropped'],
    ];
    it.each(JSON_HONEYPOTS)('in JSON, with the honeypot %s: the subscription is %s', async (_label, honeypot, fate) => {
      const { app, calls, logs } = createSubscribeApp();
      await expectAccepted(await postJson(app, { email: EMAIL, optInAttestation: true, ...honeypot }));
      expect(calls).toHaveLength(fate === 'forwarded' ? 1 : 0);
      if (fate === 'forwarded') expect(forwardedBody(calls[0])).not.toHaveProperty('website');
      expect(logs.entries().filter((entry) => entry.event === 'subscribe')).toEqual([
        expect.objectContaining({ outcome: fate === 'forwarded' ? 'forwarded' : 'honeypot' }),
      ]);
    });

    const FORM_HONEYPOTS: readonly [string, Record<string, string>, 'forwarded' | 'dropped'][] = [
      ['absent', {}, 'forwarded'],
      ['""', { website: '' }, 'forwarded'],
      ['whitespace', { website: '   ' }, 'forwarded'],
      ['"spam"', { website: 'spam' }, 'dropped'],
    ];
    it.each(FORM_HONEYPOTS)('in a form post, with the honeypot %s: the subscription is %s', async (_label, honeypot, fate) => {
      const { app, calls } = createSubscribeApp();
      await expectAccepted(await postForm(app, { email: EMAIL, optInAttestation: 'on', ...honeypot }, { Accept: 'application/json' }));
      expect(calls).toHaveLength(fate === 'forwarded' ? 1 : 0);
      if (fate === 'forwarded') expect(forwardedBody(calls[0])).not.toHaveProperty('website');
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
      await expectErrorCode(
        await postJson(app, { email: 'reader11@example.com', optInAttestation: true }, fromIp('192.0.2.1')),
        429,
        'RATE_LIMITED',
      );
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

    /** Posts once per forwarded address through one trusted proxy; returns the statuses. */
    async function statusesFor(forwarded: readonly string[], extraEnv: Record<string, string> = {}) {
      const { app, calls } = createMultiClientApp({ ...env, TRUST_PROXY_HOPS: '1', ...extraEnv });
      const statuses: number[] = [];
      for (const [index, address] of forwarded.entries()) {
        const body = { email: `reader${index}@example.com`, optInAttestation: true };
        statuses.push((await postJson(app, body, { ...fromIp('10.0.0.1'), 'X-Forwarded-For': address })).status);
      }
      return { statuses, calls };
    }

    it('counts IPv4-mapped IPv6 spellings of one IPv4 address as that address', async () => {
      const { statuses, calls } = await statusesFor(['192.0.2.1', '::ffff:192.0.2.1', '::FFFF:c000:0201', '[::ffff:192.0.2.1]:443']);
      expect(statuses).toEqual([200, 200, 200, 429]);
      expect(calls).toHaveLength(3);
    });

    it('counts a spelling with leading zeros as the proxy itself, never as a fresh visitor', async () => {
      // `192.000.002.001` is not an address we accept: the attempt counts under the socket (the proxy).
      const { statuses } = await statusesFor(['192.000.002.001', '192.00.2.01', '0192.0.2.1', 'not-an-ip']);
      expect(statuses).toEqual([200, 200, 200, 429]);
    });

    it('counts every address of one IPv6 /64 as one visitor, and another /64 apart', async () => {
      const { statuses } = await statusesFor([
        '2001:db8:1:2::1',
        '2001:db8:1:2::2',
        '2001:db8:1:2:abcd::9',
        '2001:DB8:1:2::ffff',
        '2001:db8:1:3::1',
      ]);
      expect(statuses).toEqual([200, 200, 200, 429, 200]);
    });

    it('counts IPv6 visitors per RATE_LIMIT_IPV6_PREFIX bits', async () => {
      const { statuses } = await statusesFor(['2001:db8:1:2::1', '2001:db8:1:3::1', '2001:db8:1:4::1', '2001:db8:1:5::1'], {
        RATE_LIMIT_IPV6_PREFIX: '48',
      });
      expect(statuses).toEqual([200, 200, 200, 429]);
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

    it('answers a post without JavaScript from a foreign Origin with a 403 page in plain words, not JSON, and makes no upstream call', async () => {
      const { app, calls } = createSubscribeApp({ env });
      const headers = { Origin: 'https://evil.example', Referer: 'https://evil.example/form', Accept: BROWSER_ACCEPT };
      const response = await postForm(app, { email: EMAIL, optInAttestation: 'on', returnTo: 'https://evil.example/x' }, headers);
      expect(response.status).toBe(403);
      expect(response.headers.get('content-type')).toBe('text/html; charset=UTF-8');
      expect(response.headers.get('cache-control')).toBe('no-store');
      // Never sent back to the page it came from: that page is not ours to send anyone to.
      expect(response.headers.get('location')).toBeNull();
      const page = await response.text();
      expect(page).toMatch(/^<!doctype html>/);
      expect(page).toContain('<h1>Subscription not sent</h1>');
      expect(page).not.toContain('evil.example');
      expect(calls).toHaveLength(0);
    });

    it('sends a post without JavaScript from a foreign Origin to SUBSCRIBE_REDIRECT_URL with ?subscribe_error=FORBIDDEN_ORIGIN', async () => {
      const { app, calls } = createSubscribeApp({ env: { ...env, SUBSCRIBE_REDIRECT_URL: REDIRECT_URL } });
      const response = await postForm(
        app,
        { email: EMAIL, optInAttestation: 'on' },
        { Origin: 'https://evil.example', Accept: BROWSER_ACCEPT },
      );
      expect(expectRedirect(response).href).toBe(`${REDIRECT_URL}?subscribe_error=FORBIDDEN_ORIGIN#subscribe-error`);
      expect(calls).toHaveLength(0);
    });

    it('answers a form post from a foreign Origin that asks for JSON with the JSON envelope', async () => {
      const { app, calls } = createSubscribeApp({ env: { ...env, SUBSCRIBE_REDIRECT_URL: REDIRECT_URL } });
      const response = await postForm(
        app,
        { email: EMAIL, optInAttestation: 'on' },
        { Origin: 'https://evil.example', Accept: 'application/json' },
      );
      await expectErrorCode(response, 403, 'FORBIDDEN_ORIGIN');
      expect(calls).toHaveLength(0);
    });

    it('sends the same post without JavaScript from the allowed Origin back to its page', async () => {
      const { app, calls } = createSubscribeApp({ env });
      const headers = { Origin: 'https://site.example', Referer: 'https://site.example/form', Accept: BROWSER_ACCEPT };
      const response = await postForm(app, { email: EMAIL, optInAttestation: 'on' }, headers);
      expect(expectRedirect(response).href).toBe('https://site.example/form?subscribed=1#subscribed');
      expect(calls).toHaveLength(1);
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

    it('refuses an origin that names the Host the request was sent with, when it is not listed', async () => {
      const { app, calls } = createSubscribeApp({ env });
      const headers = { Host: 'evil.example', Origin: 'http://evil.example' };
      await expectErrorCode(await postJson(app, { email: EMAIL, optInAttestation: true }, headers), 403, 'FORBIDDEN_ORIGIN');
      expect(calls).toHaveLength(0);
    });
  });
});

describe('the guards one by one', () => {
  it('counts the honeypot as filled only when it holds text that is not blank', () => {
    expect(isHoneypotFilled({ email: EMAIL }, 'website')).toBe(false);
    expect(isHoneypotFilled({ website: '  ' }, 'website')).toBe(false);
    expect(isHoneypotFilled({ website: 'https://spam.example' }, 'website')).toBe(true);
    for (const empty of [null, false, 0, undefined]) expect(isHoneypotFilled({ website: empty }, 'website')).toBe(false);
    expect(isHoneypotFilled(JSON.parse('{"__proto__":{"website":"x"}}') as Record<string, unknown>, 'website')).toBe(false);
  });

  it('remembers an address for the repeat window and forgets it after', () => {
    const clock = createFakeClock();
    const repeats = createRepeatGuard(clock.now);
    repeats.remember('jane@example.com');
    expect(repeats.isRepeat('jane@example.com')).toBe(true);
    expect(repeats.isRepeat('john@example.com')).toBe(false);
    clock.advance(REPEAT_WINDOW_MS + 1);
    expect(repeats.isRepeat('jane@example.com')).toBe(false);
  });

  it('gives RATE_LIMITED with the limiter’s Retry-After, and counts a visitor without an address as one', async () => {
    const keys: string[] = [];
    const rateLimiter = { hit: (key: string) => (keys.push(key), { allowed: keys.length < 2, retryAfterSeconds: 12 }) };
    let ip: string | undefined;
    const { app } = createSubscribeApp({ deps: { rateLimiter, clientIp: () => ip } });
    await expectAccepted(await postJson(app, { email: EMAIL, optInAttestation: true }));
    ip = '203.0.113.9';
    const limited = await postJson(app, { email: 'john@example.com', optInAttestation: true });
    await expectErrorCode(limited, 429, 'RATE_LIMITED');
    expect(limited.headers.get('retry-after')).toBe('12');
    expect(keys).toEqual(['unknown', '203.0.113.9']);
  });
});
