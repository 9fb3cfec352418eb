import type { MiddlewareHandler } from 'hono';
import { describe, expect, it } from 'vitest';
import { createOriginPolicy, listenOrigins } from '../src/core/http/origins.js';
import { corsGrant } from '../src/core/http/response-headers.js';
import { createScriptedFetch, createTestApp } from './helpers.js';
import { BROWSER_ACCEPT, EMAIL, subscriberCreated } from './subscribe/support.js';

/** Demo mode's pages: a site middleware that answers every page path. */
const site: MiddlewareHandler = async (c) => c.html('<p>page</p>');

function appWith(options: { env?: Record<string, string>; site?: MiddlewareHandler } = {}) {
  const upstream = createScriptedFetch(subscriberCreated);
  const test = createTestApp({ fetch: upstream.fetch, env: options.env, site: options.site });
  return { ...test, calls: upstream.calls };
}

const subscribeForm = (origin: string, host: string, url = 'http://127.0.0.1:8787/api/subscribe') =>
  new Request(url, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/x-www-form-urlencoded',
      Accept: BROWSER_ACCEPT,
      Host: host,
      Origin: origin,
      Referer: `${origin}/x`,
    },
    body: new URLSearchParams({ email: EMAIL, optInAttestation: 'on' }).toString(),
  });

describe('the service’s own origin', () => {
  it('is not an allowed origin of the API alone, whatever Host and Origin say', async () => {
    const { app, calls } = appWith();
    const categories = await app.request('/api/categories', { headers: { Host: 'evil.example', Origin: 'http://evil.example' } });
    expect(categories.headers.get('access-control-allow-origin')).toBeNull();
    const posted = await app.request(subscribeForm('http://evil.example', 'evil.example'));
    expect(posted.status).toBe(403);
    expect(posted.headers.get('location')).toBeNull();
    expect(calls.filter((call) => call.method === 'POST')).toHaveLength(0);
  });

  it('ignores an absolute-form request target naming another host', async () => {
    const { app, calls } = appWith();
    const posted = await app.request(subscribeForm('http://evil.example', 'bff.example', 'http://evil.example/api/subscribe'));
    expect(posted.status).toBe(403);
    expect(calls).toHaveLength(0);
  });

  it('grants the listening origins when the service serves its own pages (demo mode)', async () => {
    const { app, calls } = appWith({ site });
    const posted = await app.request(subscribeForm('http://localhost:8787', 'localhost:8787'));
    expect(posted.status).toBe(303);
    expect(new URL(posted.headers.get('location') ?? '').origin).toBe('http://localhost:8787');
    expect(calls).toHaveLength(1);
  });

  it('still refuses a Host-matching foreign origin in demo mode', async () => {
    const { app, calls } = appWith({ site });
    const posted = await app.request(subscribeForm('http://evil.example', 'evil.example'));
    expect(posted.status).toBe(403);
    expect(posted.headers.get('location')).toBeNull();
    const preflight = await app.request('/api/subscribe', {
      method: 'OPTIONS',
      headers: { Host: 'evil.example', Origin: 'http://evil.example', 'Access-Control-Request-Method': 'POST' },
    });
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull();
    expect(calls).toHaveLength(0);
  });

  it('sends a form back only to a Referer of an allowed origin, never to one the request names', async () => {
    const { app, calls } = appWith({ env: { ALLOWED_ORIGINS: 'https://site.example' } });
    const posted = await app.request(subscribeForm('https://site.example', 'evil.example'));
    expect(new URL(posted.headers.get('location') ?? '').origin).toBe('https://site.example');
    expect(calls).toHaveLength(1);
  });
});

describe('listenOrigins', () => {
  it('names the loopback origins for a loopback or wildcard address', () => {
    const loopback = ['http://localhost:8787', 'http://127.0.0.1:8787', 'http://[::1]:8787'];
    for (const host of ['127.0.0.1', 'localhost', '::1', '0.0.0.0', '::']) expect(listenOrigins(host, 8787)).toEqual(loopback);
  });

  it('names the configured host otherwise, without a default port', () => {
    expect(listenOrigins('bff.internal.example', 80)).toEqual(['http://bff.internal.example']);
    expect(listenOrigins('fe80::1', 3000)).toEqual(['http://[fe80::1]:3000']);
  });
});

describe('corsGrant', () => {
  it('grants any origin with *, an allowed origin echoed, and nothing else', () => {
    expect(corsGrant(createOriginPolicy('*'), 'http://evil.example')?.['Access-Control-Allow-Origin']).toBe('*');
    const listed = createOriginPolicy(['https://site.example']);
    expect(corsGrant(listed, 'https://site.example')?.['Access-Control-Allow-Origin']).toBe('https://site.example');
    expect(corsGrant(listed, 'https://site.example.evil.example')).toBeUndefined();
    expect(corsGrant(listed, undefined)).toBeUndefined();
  });
});
