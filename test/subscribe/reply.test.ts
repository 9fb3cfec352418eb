import { describe, expect, it } from 'vitest';
import { Hono } from 'hono';
import { ApiError } from '../../src/core/http/errors.js';
import { createOriginPolicy } from '../../src/core/http/origins.js';
import { redirectTarget, reply } from '../../src/core/routes/subscribe.js';
import {
  PATH,
  EMAIL,
  BROWSER_ACCEPT,
  REDIRECT_URL,
  SUCCESS_BODY,
  upstreamFailure,
  createSubscribeApp,
  postJson,
  postForm,
  postMultipart,
  postChunked,
  expectAccepted,
  expectRedirect,
  forwardedBody,
  type TestApp,
} from './support.js';

// docs/contract.md "POST /api/subscribe": the reply to a form post without JavaScript: 303 with a query and a fragment.

describe('POST /api/subscribe', () => {
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
      const response = await postForm(app, { email: EMAIL, optInAttestation: 'on', padding: 'x'.repeat(9000) }, { Accept: BROWSER_ACCEPT });
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

    describe('the returnTo field (the page to come back to, as a site that knows it fills it in)', () => {
      const fromSite = { Accept: BROWSER_ACCEPT, Origin: 'https://site.example', Referer: 'https://site.example/' };

      it('sends a form post back to the page its returnTo field names, on the site the post came from', async () => {
        const { app, calls } = createSubscribeApp();
        const response = await postForm(app, { email: EMAIL, optInAttestation: 'on', returnTo: 'https://site.example/page/2/' }, fromSite);
        expect(expectRedirect(response).href).toBe('https://site.example/page/2/?subscribed=1#subscribed');
        expect(calls).toHaveLength(1);
        // The field is ours: only the four known fields go upstream.
        expect(Object.keys(forwardedBody(calls[0]) as object)).not.toContain('returnTo');
      });

      it('sends a refused form post back to that page too, with the error, and makes no upstream call', async () => {
        const { app, calls } = createSubscribeApp();
        const response = await postForm(app, { email: EMAIL, returnTo: 'https://site.example/issues/a-year/' }, fromSite);
        expect(expectRedirect(response).href).toBe('https://site.example/issues/a-year/?subscribe_error=VALIDATION_ERROR#subscribe-error');
        expect(calls).toHaveLength(0);
      });

      it('takes the post’s origin from the Referer when the browser sends no Origin', async () => {
        const { app } = createSubscribeApp();
        const headers = { Accept: BROWSER_ACCEPT, Referer: 'https://site.example/' };
        const response = await postForm(app, { email: EMAIL, optInAttestation: 'on', returnTo: 'https://site.example/about/' }, headers);
        expect(expectRedirect(response).href).toBe('https://site.example/about/?subscribed=1#subscribed');
      });

      it('drops the page’s fragment and its old subscribed or subscribe_error, so the outcome’s own mark shows', async () => {
        const { app } = createSubscribeApp();
        const returnTo = 'https://site.example/page/2/?subscribe_error=RATE_LIMITED&tag=x#subscribe';
        const response = await postForm(app, { email: EMAIL, optInAttestation: 'on', returnTo }, fromSite);
        expect(expectRedirect(response).href).toBe('https://site.example/page/2/?tag=x&subscribed=1#subscribed');
      });

      it('ignores a returnTo on another host, and falls back to the Referer', async () => {
        const { app } = createSubscribeApp();
        const response = await postForm(app, { email: EMAIL, optInAttestation: 'on', returnTo: 'https://evil.example/phish' }, fromSite);
        expect(expectRedirect(response).href).toBe('https://site.example/?subscribed=1#subscribed');
      });

      it('ignores a returnTo on an allowed origin other than the one the post came from', async () => {
        const { app } = createSubscribeApp({ env: { ALLOWED_ORIGINS: 'https://site.example,https://shop.example' } });
        const response = await postForm(app, { email: EMAIL, optInAttestation: 'on', returnTo: 'https://shop.example/cart' }, fromSite);
        expect(expectRedirect(response).href).toBe('https://site.example/?subscribed=1#subscribed');
      });

      it.each([
        ['a relative path', '/page/2/'],
        ['a scheme-relative URL', '//evil.example/page/2/'],
        ['a javascript: URL', 'javascript:alert(1)'],
        ['credentials in the URL', 'https://user:pass@site.example/page/2/'],
        ['an address longer than any page has', `https://site.example/${'a'.repeat(2100)}`],
      ])('ignores %s', async (_label, returnTo) => {
        const { app } = createSubscribeApp();
        const response = await postForm(app, { email: EMAIL, optInAttestation: 'on', returnTo }, fromSite);
        expect(expectRedirect(response).href).toBe('https://site.example/?subscribed=1#subscribed');
      });

      it('with ALLOWED_ORIGINS=*, sends a post back to a page of its own site', async () => {
        const { app } = createSubscribeApp({ env: { ALLOWED_ORIGINS: '*' } });
        const headers = { Accept: BROWSER_ACCEPT, Origin: 'https://blog.example', Referer: 'https://blog.example/' };
        const response = await postForm(app, { email: EMAIL, optInAttestation: 'on', returnTo: 'https://blog.example/posts/1' }, headers);
        expect(expectRedirect(response).href).toBe('https://blog.example/posts/1?subscribed=1#subscribed');
      });

      it('with ALLOWED_ORIGINS=*, ignores a returnTo on another site, or from a post that names no site', async () => {
        const { app } = createSubscribeApp({ env: { ALLOWED_ORIGINS: '*' } });
        const headers = { Accept: BROWSER_ACCEPT, Origin: 'https://blog.example', Referer: 'https://blog.example/' };
        const elsewhere = await postForm(app, { email: EMAIL, optInAttestation: 'on', returnTo: 'https://evil.example/phish' }, headers);
        expect(expectRedirect(elsewhere).href).toBe('https://blog.example/?subscribed=1#subscribed');
        const anonymous = await postForm(
          app,
          { email: 'b@example.com', optInAttestation: 'on', returnTo: 'https://evil.example/phish' },
          { Accept: BROWSER_ACCEPT },
        );
        await expectAccepted(anonymous);
      });

      it('leaves SUBSCRIBE_REDIRECT_URL first when one is configured', async () => {
        const { app } = createSubscribeApp({ env: redirectEnv });
        const response = await postForm(app, { email: EMAIL, optInAttestation: 'on', returnTo: 'https://site.example/page/2/' }, fromSite);
        expect(expectRedirect(response).href).toBe(`${REDIRECT_URL}?subscribed=1#subscribed`);
      });

      it('is not read from a JSON post, which gets JSON', async () => {
        const { app } = createSubscribeApp();
        await expectAccepted(
          await postJson(
            app,
            { email: EMAIL, optInAttestation: true, returnTo: 'https://site.example/page/2/' },
            { Origin: 'https://site.example' },
          ),
        );
      });
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

    it.each(
      [
        { label: '200', send: (app: TestApp) => postJson(app, { email: EMAIL, optInAttestation: true }) },
        { label: '303', send: (app: TestApp) => postForm(app, { email: EMAIL, optInAttestation: 'on' }, { Accept: BROWSER_ACCEPT }) },
        { label: '403', send: (app: TestApp) => postJson(app, {}, { Origin: 'https://evil.example' }) },
        { label: '413', send: (app: TestApp) => postChunked(app, 'x'.repeat(9000)) },
        {
          label: '415',
          send: (app: TestApp) =>
            Promise.resolve(app.request(PATH, { method: 'POST', headers: { 'Content-Type': 'text/plain' }, body: 'x' })),
        },
        { label: '422', send: (app: TestApp) => postJson(app, { email: EMAIL }) },
      ].map((entry) => [entry.label, entry] as const),
    )('marks a %s subscribe response Cache-Control: no-store', async (label, { send }) => {
      const { app } = createSubscribeApp({ env: redirectEnv });
      const response = await send(app);
      expect(String(response.status)).toBe(label);
      expect(response.headers.get('cache-control')).toBe('no-store');
    });
  });
});

describe('redirectTarget and reply on their own', () => {
  /** A bare app that answers every POST with `reply`, optionally with an error. */
  function replyApp(redirectUrl: string | undefined, error?: ApiError) {
    const origins = createOriginPolicy(['https://site.example']);
    return new Hono().post('/', (c) => reply(c, redirectTarget(c, redirectUrl, origins), error));
  }
  const formPost = (headers: Record<string, string>) => ({
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', ...headers },
    body: 'email=x',
  });

  it('sends a form post back to an allowed referring page with 303, the query and the fragment', async () => {
    const response = await replyApp(undefined).request(
      'http://bff.example/',
      formPost({ Referer: 'https://site.example/join?subscribed=0' }),
    );
    expect(response.status).toBe(303);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(response.headers.get('location')).toBe('https://site.example/join?subscribed=1#subscribed');
  });

  it('answers JSON when the referring page is not an allowed origin, or when the form asks for JSON', async () => {
    const requests: Record<string, string>[] = [
      { Referer: 'https://evil.example/' },
      { Referer: 'https://site.example/', Accept: 'application/json' },
    ];
    for (const headers of requests) {
      const response = await replyApp(undefined).request('http://bff.example/', formPost(headers));
      expect(response.status).toBe(200);
      expect(await response.text()).toBe(SUCCESS_BODY);
    }
  });

  it('puts the error code in the configured redirect URL and keeps its fragment', async () => {
    const response = await replyApp(`${REDIRECT_URL}#form`, new ApiError('RATE_LIMITED')).request('http://bff.example/', formPost({}));
    expect(response.status).toBe(303);
    expect(response.headers.get('location')).toBe(`${REDIRECT_URL}?subscribe_error=RATE_LIMITED#form`);
  });
});
