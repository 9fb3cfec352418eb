import { createServer, type Server } from 'node:http';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  buildServer,
  freePort,
  launchBrowser,
  listen,
  openVisitorPage,
  startDemoServer,
  startRefusingProxy,
  type DemoServer,
  type RefusingProxy,
} from './support.js';

// docs/subscribe.md "Surges" and "Form messages": during a surge with TURNSTILE_MODE=surge, the
// example site's form meets 403 CAPTCHA_REQUIRED, shows the widget with the site key the answer
// carries, and resubmits once it passes; without JavaScript the page says what to do. Turnstile's
// script is a local fake served for its real address, and siteverify a fake on loopback.

const SITE_KEY = '1x00000000000000000000AA';
const TURNSTILE_SCRIPT = 'https://challenges.cloudflare.com/turnstile/v0/api.js';

/** Turnstile's explicit API as the form uses it: a "check" button that hands back a token when pressed. */
const FAKE_TURNSTILE = `
(function () {
  var count = 0;
  window.turnstile = {
    render: function (container, options) {
      var id = 'fake-widget-' + (++count);
      var check = document.createElement('button');
      check.type = 'button';
      check.textContent = 'Verify you are human';
      check.setAttribute('data-sitekey', options.sitekey);
      check.addEventListener('click', function () { options.callback('pass-browser-' + count); });
      container.appendChild(check);
      return id;
    },
    reset: function () {},
    remove: function () {}
  };
  var onload = /[?&]onload=([A-Za-z_$][\\w$]*)/.exec(document.currentScript.src);
  if (onload && typeof window[onload[1]] === 'function') window[onload[1]]();
})();`;

let server: DemoServer;
let verifier: Server;
let offMachine: RefusingProxy;
let browser: Browser;
const verified: string[] = [];
const contexts: BrowserContext[] = [];

beforeAll(async () => {
  await buildServer();
  verifier = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      const token = new URLSearchParams(body).get('response') ?? '';
      verified.push(token);
      const answer = token.startsWith('pass-')
        ? { success: true, 'error-codes': [] }
        : { success: false, 'error-codes': ['invalid-input-response'] };
      res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(answer));
    });
  });
  const { port: verifierPort } = await listen(verifier, '127.0.0.1');
  const port = await freePort();
  server = await startDemoServer(port, {
    TURNSTILE_SECRET_KEY: '0x4AAAAAAA-fake-e2e-secret',
    TURNSTILE_SITE_KEY: SITE_KEY,
    TURNSTILE_VERIFY_URL: `http://127.0.0.1:${verifierPort}/siteverify`,
    TURNSTILE_MODE: 'surge',
    SUBSCRIBE_SURGE_PER_MINUTE: '1',
    SUBSCRIBE_RATE_LIMIT_PER_MINUTE: '100',
  });
  offMachine = await startRefusingProxy([new URL(server.origin).hostname]);
  browser = await launchBrowser();
  // Two sign-ups in a moment pass a threshold of one a minute: the surge is on for the tests.
  const post = (email: string) =>
    fetch(`${server.origin}/api/subscribe`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ email, optInAttestation: true }),
    });
  expect((await post('first@example.com')).status).toBe(200);
  expect((await post('second@example.com')).status).toBe(403);
});

afterEach(async () => {
  await Promise.all(contexts.splice(0).map((context) => context.close()));
});

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await offMachine?.close();
  await new Promise<void>((resolve) => (verifier ? verifier.close(() => resolve()) : resolve()));
});

async function openPage(javaScript: boolean): Promise<Page> {
  const page = await openVisitorPage(browser, offMachine.proxy, contexts, javaScript);
  await page.route(`${TURNSTILE_SCRIPT}*`, (route) => route.fulfill({ status: 200, contentType: 'text/javascript', body: FAKE_TURNSTILE }));
  return page;
}

describe('the subscribe form during a surge (TURNSTILE_MODE=surge), in Chromium', () => {
  it('shows the challenge the service asks for, in the site’s own words, and resubmits by itself once it passes', async () => {
    const page = await openPage(true);
    const bodies: unknown[] = [];
    page.on('request', (request) => {
      if (request.method() === 'POST' && request.url().endsWith('/api/subscribe')) bodies.push(JSON.parse(request.postData() ?? 'null'));
    });
    await page.goto(`${server.origin}/`);
    const form = page.locator('form[data-newsletter-subscribe]');
    const status = form.locator('[data-subscribe-status]');
    // No widget in quiet times: the page was given no site key.
    expect(await form.locator('.cf-turnstile, .subscribe-challenge').count()).toBe(0);
    // The owner's words, set on the form as the docs show (German here).
    await form.evaluate((element) => {
      element.setAttribute('data-message-challenge', 'Noch ein Schritt: Bitte bestätigen Sie kurz, dass Sie kein Bot sind.');
      element.setAttribute('data-message-success', 'Danke! Sie sind angemeldet.');
    });
    await page.getByLabel('Email address').fill('visitor@example.com');
    await page.getByLabel(/^Yes, email me each new issue/).check();
    await form.locator('button[type="submit"]').click();

    const check = page.getByRole('button', { name: 'Verify you are human' });
    await check.waitFor();
    expect(await check.getAttribute('data-sitekey')).toBe(SITE_KEY);
    expect(await status.textContent()).toBe('Noch ein Schritt: Bitte bestätigen Sie kurz, dass Sie kein Bot sind.');
    await check.click();
    await expect.poll(() => status.textContent()).toBe('Danke! Sie sind angemeldet.');
    expect(await status.getAttribute('data-state')).toBe('success');
    expect(bodies).toEqual([
      { email: 'visitor@example.com', optInAttestation: true, website: '' },
      { email: 'visitor@example.com', optInAttestation: true, website: '', 'cf-turnstile-response': 'pass-browser-1' },
    ]);
    expect(verified).toEqual(['pass-browser-1']);
    // The widget goes once the visitor is subscribed.
    expect(await form.locator('.subscribe-challenge').count()).toBe(0);
    await expect.poll(() => server.logs().filter((line) => line.event === 'subscribe' && line.outcome === 'forwarded').length).toBe(2);
    expect(server.logs().filter((line) => line.event === 'subscribe_surge_started')).toHaveLength(1);
  });

  it('without JavaScript, comes back with ?subscribe_error=CAPTCHA_REQUIRED and the page’s <noscript> text says what to do', async () => {
    const page = await openPage(false);
    await page.goto(`${server.origin}/`);
    expect(await page.locator('#subscribe-challenge').isVisible()).toBe(false);
    await page.getByLabel('Email address').fill('nojs.visitor@example.com');
    await page.getByLabel(/^Yes, email me each new issue/).check();
    await page.getByRole('button', { name: 'Subscribe' }).click();
    await page.waitForURL(`${server.origin}/?subscribe_error=CAPTCHA_REQUIRED#subscribe-challenge`);
    expect(await page.locator('#subscribe-challenge').isVisible()).toBe(true);
    expect(await page.locator('#subscribe-challenge').textContent()).toMatch(/needs JavaScript/);
    expect(await page.locator('#subscribe-error').isVisible()).toBe(false);
  });
});
