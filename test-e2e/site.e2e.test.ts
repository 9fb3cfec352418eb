import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  buildServer,
  freePort,
  launchBrowser,
  openVisitorPage,
  SCREENSHOT_DIR,
  startDemoServer,
  startRefusingProxy,
  startStaticSite,
  type DemoServer,
  type RefusingProxy,
  type StaticSite,
} from './support.js';

interface Summary {
  slug: string;
  subject: string;
  thumbnailUrl: string | null;
  category: { name: string; slug: string } | null;
}
interface Archive {
  data: Summary[];
  meta: { total: number; limit: number; offset: number };
}

const SUCCESS = 'Thank you! You are subscribed. Look out for the next issue in your inbox.';
const CONSENT_ERROR = 'Please tick the box to confirm that you want the newsletter by email.';
const EMAIL_ERROR = 'Please enter a valid email address, like name@example.com.';
const NETWORK_ERROR = 'We could not reach the newsletter service. Check your connection and try again.';

let server: DemoServer;
let allowedSite: StaticSite;
let unlistedSite: StaticSite;
let offMachine: RefusingProxy;
let browser: Browser;
const contexts: BrowserContext[] = [];

beforeAll(async () => {
  await mkdir(SCREENSHOT_DIR, { recursive: true });
  await buildServer();
  const port = await freePort();
  const bffOrigin = `http://127.0.0.1:${port}`;
  allowedSite = await startStaticSite('127.0.0.2', bffOrigin);
  unlistedSite = await startStaticSite('127.0.0.3', bffOrigin);
  // Demo mode (no key), the second origin allowed, SUBSCRIBE_REDIRECT_URL unset: form posts go back to the Referer.
  server = await startDemoServer(port, { ALLOWED_ORIGINS: allowedSite.origin });
  offMachine = await startRefusingProxy([server.origin, allowedSite.origin, unlistedSite.origin].map((o) => new URL(o).hostname));
  browser = await launchBrowser();
});

afterEach(async () => {
  await Promise.all(contexts.splice(0).map((context) => context.close()));
});

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await allowedSite?.close();
  await unlistedSite?.close();
  await offMachine?.close();
});

function openPage(options: { javaScript?: boolean } = {}): Promise<Page> {
  return openVisitorPage(browser, offMachine.proxy, contexts, options.javaScript ?? true);
}

async function screenshot(target: Page | Locator, name: string): Promise<void> {
  const path = join(SCREENSHOT_DIR, `${name}.png`);
  if ('goto' in target) await target.screenshot({ path, fullPage: true });
  else await target.screenshot({ path });
}

async function api<T>(path: string): Promise<T> {
  return (await (await fetch(`${server.origin}${path}`)).json()) as T;
}

/** Counts the POSTs this page sends to /api/subscribe (mocked or real). */
function countSubscribePosts(page: Page): () => number {
  let count = 0;
  page.on('request', (request) => {
    if (request.method() === 'POST' && new URL(request.url()).pathname === '/api/subscribe') count += 1;
  });
  return () => count;
}

function subscribeLogs(outcome: string) {
  return server.logs().filter((line) => line.event === 'subscribe' && line.outcome === outcome);
}

describe('the example site, in Chromium against the demo server', () => {
  it('renders the archive, pages through it and filters by category', async () => {
    const [first, second, categories] = await Promise.all([
      api<Archive>('/api/issues?limit=10'),
      api<Archive>('/api/issues?limit=10&offset=10'),
      api<{ data: { name: string; slug: string }[] }>('/api/categories'),
    ]);
    const pages = Math.ceil(first.meta.total / 10);
    const page = await openPage();
    await page.goto(`${server.origin}/`);

    const cards = page.locator('.issue-card');
    await expect.poll(() => cards.count()).toBe(10);
    expect(await page.locator('.issue-card h2').allTextContents()).toEqual(first.data.map((issue) => issue.subject));
    expect(await page.locator('#archive-summary').textContent()).toBe(`${first.meta.total} issues · page 1 of ${pages}`);
    await page.locator('#categories').waitFor();
    expect(await page.locator('#category-list a').allTextContents()).toEqual(['All issues', ...categories.data.map((c) => c.name)]);
    expect(await page.locator('#category-list a[aria-current="page"]').textContent()).toBe('All issues');
    expect(await page.locator('#pager-newer').getAttribute('aria-disabled')).toBe('true');
    await screenshot(page, 'archive');

    await page.locator('#pager-older').click();
    await page.waitForURL(`${server.origin}/?page=2`);
    await expect.poll(() => page.locator('.issue-card h2').allTextContents()).toEqual(second.data.map((issue) => issue.subject));
    expect(await page.locator('#pager-position').textContent()).toBe(`Page 2 of ${pages}`);
    expect(await page.title()).toBe('The Field Notes · Archive · page 2');

    await page.goto(`${server.origin}/?page=${pages}`);
    await expect.poll(() => cards.count()).toBe(first.meta.total - (pages - 1) * 10);
    expect(await page.locator('#pager-older').getAttribute('aria-disabled')).toBe('true');
    expect(await page.locator('#pager-older').getAttribute('href')).toBeNull();

    const interviews = categories.data.find((c) => c.slug === 'interviews');
    expect(interviews).toBeDefined();
    const filtered = await api<Archive>('/api/issues?limit=10&category=interviews');
    await page.locator('#category-list a', { hasText: interviews!.name }).click();
    await page.waitForURL(`${server.origin}/?category=interviews`);
    await expect.poll(() => page.locator('.issue-card h2').allTextContents()).toEqual(filtered.data.map((i) => i.subject));
    expect(new Set(await page.locator('.issue-card .category').allTextContents())).toEqual(new Set([interviews!.name]));
    expect(await page.locator('#category-list a[aria-current="page"]').textContent()).toBe(interviews!.name);
    expect(await page.locator('#archive-summary').textContent()).toMatch(new RegExp(`^${filtered.meta.total} issues · page 1 of `));
    await screenshot(page, 'archive-category');
  });

  it('shows the empty state for a category without issues, and the error state with a retry', async () => {
    const page = await openPage();
    await page.goto(`${server.origin}/?category=no-such-category`);
    await page.locator('#archive-empty').waitFor();
    expect(await page.locator('#archive-empty-text').textContent()).toBe('No issues in this category yet.');
    expect(await page.locator('#issue-list').isHidden()).toBe(true);
    await screenshot(page, 'archive-empty');

    await page.route(`${server.origin}/api/issues?**`, (route) =>
      route.fulfill({
        status: 503,
        contentType: 'application/json',
        headers: { 'Retry-After': '30' },
        body: JSON.stringify({ ok: false, error: { code: 'UPSTREAM_UNAVAILABLE', message: 'busy' } }),
      }),
    );
    await page.goto(`${server.origin}/`);
    const error = page.locator('#archive-error');
    await error.waitFor();
    expect(await error.getAttribute('role')).toBe('alert');
    expect(await error.textContent()).not.toContain('UPSTREAM_UNAVAILABLE');
    await screenshot(page, 'archive-error');

    await page.unroute(`${server.origin}/api/issues?**`);
    await page.getByRole('button', { name: 'Try again' }).click();
    await expect.poll(() => page.locator('.issue-card').count()).toBe(10);
    expect(await error.isHidden()).toBe(true);
  });

  it('searches the archive from the box: the matches, their count and reading time, kept across pages (JavaScript on)', async () => {
    const expected = await api<Archive & { data: { readingMinutes: number | null }[] }>('/api/issues?q=garden&limit=10');
    expect(expected.meta.total).toBeGreaterThan(10);
    const page = await openPage();
    await page.goto(`${server.origin}/`);
    await page.locator('.issue-card').first().waitFor();
    await page.getByLabel('Search the archive').fill('garden');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(`${server.origin}/?q=garden`);
    await expect.poll(() => page.locator('.issue-card h2').allTextContents()).toEqual(expected.data.map((issue) => issue.subject));
    const pages = Math.ceil(expected.meta.total / 10);
    await expect
      .poll(() => page.locator('#archive-summary').textContent())
      .toBe(`${expected.meta.total} issues match “garden” · page 1 of ${pages}`);
    expect(await page.locator('#search-q').inputValue()).toBe('garden');
    expect(await page.title()).toBe('The Field Notes · Search: garden');
    expect(await page.locator('.issue-card .meta').first().textContent()).toContain(`${expected.data[0]!.readingMinutes} min read`);
    await screenshot(page, 'archive-search');
    await page.locator('#pager-older').click();
    await page.waitForURL(`${server.origin}/?q=garden&page=2`);
    const second = await api<Archive>('/api/issues?q=garden&limit=10&offset=10');
    await expect.poll(() => page.locator('.issue-card h2').allTextContents()).toEqual(second.data.map((issue) => issue.subject));

    await page.getByLabel('Search the archive').fill('nothing-like-this');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.locator('#archive-empty').waitFor();
    expect(await page.locator('#archive-empty-text').textContent()).toBe('No issues match “nothing-like-this”.');
  });

  it('searches without JavaScript: the form’s GET comes back with the matches already in the page', async () => {
    const expected = await api<Archive>('/api/issues?q=compost&limit=10');
    expect(expected.meta.total).toBeGreaterThan(0);
    const page = await openPage({ javaScript: false });
    await page.goto(`${server.origin}/`);
    await page.getByLabel('Search the archive').fill('compost');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(`${server.origin}/?q=compost`);
    expect(await page.locator('.issue-card h2').allTextContents()).toEqual(expected.data.map((issue) => issue.subject));
    expect(await page.locator('#archive-summary').textContent()).toMatch(
      new RegExp(`^${expected.meta.total} issues? match(es)? “compost” · page 1 of 1$`),
    );
    expect(await page.getByText('The archive needs JavaScript').count()).toBe(0);
    await page.locator('.issue-card h2 a').first().click();
    await page.waitForURL(`${server.origin}/issue.html?slug=${expected.data[0]!.slug}`);
    await screenshot(page, 'archive-search-nojs');
  });

  it('shows an issue’s reading time and links to the newer and older issue, none beyond the ends', async () => {
    const { data } = await api<Archive>('/api/issues?limit=100');
    const middle = data[3]!;
    const page = await openPage();
    await page.goto(`${server.origin}/issue.html?slug=${middle.slug}`);
    await page.locator('#issue').waitFor();
    const detail = await api<{ data: { readingMinutes: number } }>(`/api/issues/${middle.slug}`);
    expect(await page.locator('#issue-meta').textContent()).toContain(`${detail.data.readingMinutes} min read`);
    expect(await page.locator('#issue-newer').textContent()).toBe(`← Newer: ${data[2]!.subject}`);
    expect(await page.locator('#issue-older').textContent()).toBe(`Older: ${data[4]!.subject} →`);
    await screenshot(page, 'issue-neighbours');
    await page.locator('#issue-older').click();
    await page.waitForURL(`${server.origin}/issue.html?slug=${data[4]!.slug}`);
    await expect.poll(() => page.locator('#issue-title').textContent()).toBe(data[4]!.subject);

    await page.goto(`${server.origin}/issue.html?slug=${data[0]!.slug}`);
    await expect.poll(() => page.locator('#issue-title').textContent()).toBe(data[0]!.subject);
    expect(await page.locator('#issue-newer').isHidden()).toBe(true);
    expect(await page.locator('#issue-older').isVisible()).toBe(true);
    await page.goto(`${server.origin}/issue.html?slug=${data.at(-1)!.slug}`);
    await expect.poll(() => page.locator('#issue-title').textContent()).toBe(data.at(-1)!.subject);
    expect(await page.locator('#issue-older').isHidden()).toBe(true);
  });

  it('links the Atom feed from its pages, and the feed’s entries open the issue pages it serves', async () => {
    const { data } = await api<Archive>('/api/issues?limit=1');
    const latest = data[0]!;
    const page = await openPage();
    await page.goto(`${server.origin}/`);
    const href = await page.locator('link[rel="alternate"][type="application/atom+xml"]').getAttribute('href');
    const feedUrl = new URL(href!, page.url()).href;
    expect(feedUrl).toBe(`${server.origin}/api/issues?format=atom`);
    const feed = await fetch(feedUrl);
    expect(feed.status).toBe(200);
    expect(feed.headers.get('content-type')).toBe('application/atom+xml; charset=utf-8');
    const entryLink = /<entry>[\s\S]*?<link rel="alternate" type="text\/html" href="([^"]+)"/.exec(await feed.text())?.[1];
    expect(entryLink).toBe(`${server.origin}/issue.html?slug=${latest.slug}`);
    await page.goto(entryLink!);
    await page.locator('#issue').waitFor();
    expect(await page.locator('#issue-title').textContent()).toBe(latest.subject);
  });

  it('opens an issue and renders its HTML inside the sandboxed iframe', async () => {
    const { data } = await api<Archive>('/api/issues?limit=1');
    const latest = data[0]!;
    const page = await openPage();
    await page.goto(`${server.origin}/`);
    await page.locator('.issue-card h2 a').first().click();
    await page.waitForURL(`${server.origin}/issue.html?slug=${latest.slug}`);
    await page.locator('#issue').waitFor();

    expect(await page.locator('#issue-title').textContent()).toBe(latest.subject);
    expect(await page.title()).toBe(`${latest.subject} · The Field Notes`);
    const iframe = page.locator('#issue-frame');
    const tokens = ((await iframe.getAttribute('sandbox')) ?? '').split(/\s+/).sort();
    expect(tokens).toEqual(['allow-popups', 'allow-popups-to-escape-sandbox', 'allow-same-origin']);
    expect(await iframe.getAttribute('srcdoc')).toContain('<p>');

    // The letter opens with its subject as an <h1>: dropped, so the page shows its title once.
    const frame = page.frameLocator('#issue-frame');
    expect(await frame.locator('h1').count()).toBe(0);
    expect(await page.locator('h1:visible').allTextContents()).toEqual([latest.subject]);
    expect(await page.locator('meta[property="og:title"]').getAttribute('content')).toBe(latest.subject);
    expect(await page.locator('meta[property="og:image"]').getAttribute('content')).toBe(latest.thumbnailUrl);
    expect(await frame.locator('a').first().getAttribute('href')).toMatch(/^https:\/\/fieldnotes\.example\.com\//);
    expect(await frame.locator('base').getAttribute('target')).toBe('_blank');
    // Sized to its content: the page scrolls as one, the frame has no scrollbar of its own.
    await expect
      .poll(async () => {
        const frameHeight = await iframe.evaluate((node) => (node as HTMLIFrameElement).clientHeight);
        const contentHeight = await frame.locator('html').evaluate((html) => html.scrollHeight);
        return frameHeight >= contentHeight && contentHeight > 300;
      })
      .toBe(true);
    await screenshot(page, 'issue');

    await page.goto(`${server.origin}/issue.html?slug=no-such-issue`);
    await page.locator('#issue-missing').waitFor();
    expect(await page.locator('#issue-missing h1').textContent()).toBe('Issue not found');
  });

  it('keeps script in an issue from running: nothing in the sandboxed frame can reach the page', async () => {
    const page = await openPage();
    const contentHtml =
      '<h1>Hostile issue</h1>' +
      '<script>parent.document.body.dataset.pwned = "script"</script>' +
      '<img src="data:," onerror="parent.document.body.dataset.pwned = \'onerror\'">' +
      '<a id="js-link" href="javascript:parent.document.body.dataset.pwned = \'link\'">a link</a>' +
      '<form action="/api/subscribe" method="post"><button id="form-button">send</button></form>';
    await page.route(`${server.origin}/api/issues/hostile-issue`, (route) =>
      route.fulfill({
        contentType: 'application/json',
        body: JSON.stringify({
          ok: true,
          data: {
            slug: 'hostile-issue',
            subject: 'Hostile <b>subject</b>',
            previewText: '<img src=x onerror=alert(1)>',
            thumbnailUrl: null,
            sentAt: '2026-11-15T09:00:00.000Z',
            category: null,
            contentHtml,
          },
        }),
      }),
    );
    const posts = countSubscribePosts(page);
    await page.goto(`${server.origin}/issue.html?slug=hostile-issue`);
    const frame = page.frameLocator('#issue-frame');
    await frame.locator('h1').waitFor();
    // Text from the API is text: the markup in the subject and preview is shown, not parsed.
    expect(await page.locator('#issue-title').textContent()).toBe('Hostile <b>subject</b>');
    expect(await page.locator('#issue-title b').count()).toBe(0);
    expect(await page.locator('#issue-preview').textContent()).toBe('<img src=x onerror=alert(1)>');

    await frame.locator('#js-link').click();
    await frame.locator('#form-button').click();
    expect(await page.evaluate(() => document.body.dataset.pwned ?? 'untouched')).toBe('untouched');
    expect(posts()).toBe(0);
    expect(page.context().pages()).toHaveLength(1);
  });

  it('subscribes with JavaScript: JSON is posted, the button is disabled while pending, then the success shows inline', async () => {
    const page = await openPage();
    const posts = countSubscribePosts(page);
    await page.goto(`${server.origin}/`);
    const form = page.locator('form[data-newsletter-subscribe]');
    const button = form.locator('button[type="submit"]');
    const status = form.locator('[data-subscribe-status]');
    const heightBefore = (await form.boundingBox())!.height;

    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    await page.route(`${server.origin}/api/subscribe`, async (route) => {
      await held;
      await route.continue();
    });
    await page.getByLabel('Email address').fill('reader.js@example.com');
    await page.getByLabel(/^Yes, email me each new issue/).check();
    const [request] = await Promise.all([page.waitForRequest(`${server.origin}/api/subscribe`), button.click()]);
    expect(request.headers()['content-type']).toBe('application/json');
    expect(request.headers().accept).toBe('application/json');
    expect(JSON.parse(request.postData() ?? '')).toEqual({ email: 'reader.js@example.com', optInAttestation: true, website: '' });
    await expect.poll(() => button.getAttribute('aria-disabled')).toBe('true');
    expect(await status.textContent()).toBe('Subscribing…');
    expect(await form.getAttribute('aria-busy')).toBe('true');
    // A second press while pending sends nothing more (force: Playwright will not click an aria-disabled button).
    await button.click({ force: true });
    await screenshot(page.locator('.subscribe-box'), 'subscribe-pending');

    const responseSeen = page.waitForResponse(`${server.origin}/api/subscribe`);
    release();
    const response = await responseSeen;
    expect(response.status()).toBe(200);
    expect(await response.json()).toEqual({ ok: true, data: { accepted: true } });
    await expect.poll(() => status.textContent()).toBe(SUCCESS);
    expect(await status.getAttribute('data-state')).toBe('success');
    expect(await button.getAttribute('aria-disabled')).toBeNull();
    expect(await page.getByLabel('Email address').inputValue()).toBe('');
    expect(await page.getByLabel(/^Yes, email me each new issue/).isChecked()).toBe(false);
    // Room for the message was reserved: nothing below the form moved.
    expect((await form.boundingBox())!.height).toBe(heightBefore);
    await screenshot(page.locator('.subscribe-box'), 'subscribe-success');
    expect(posts()).toBe(1);
    await expect.poll(() => subscribeLogs('forwarded').length).toBe(1);
  });

  it('can be used with the keyboard alone: email, Tab, Space to tick, Tab, Enter (the honeypot is skipped)', async () => {
    const page = await openPage();
    await page.goto(`${server.origin}/`);
    await page.locator('.issue-card').first().waitFor();
    await page.getByLabel('Email address').focus();
    await page.keyboard.type('reader.keyboard@example.com');
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('subscribe-consent');
    await page.keyboard.press('Space');
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Subscribe');
    await page.keyboard.press('Enter');
    const status = page.locator('[data-subscribe-status]');
    await expect.poll(() => status.textContent()).toBe(SUCCESS);
    // Focus stays on the button (aria-disabled, not disabled, while pending).
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Subscribe');
    const honeypot = page.locator('input[name="website"]');
    expect(await honeypot.getAttribute('tabindex')).toBe('-1');
    expect(await honeypot.getAttribute('autocomplete')).toBe('off');
    expect(await honeypot.isVisible()).toBe(false);
    // Inside a `hidden` element: out of the accessibility tree as well (aria-hidden beside it would say it twice).
    expect(await honeypot.evaluate((input) => input.closest('[hidden]') !== null)).toBe(true);
  });

  it('shows a missing consent tick and a bad address inline, and sends nothing', async () => {
    const page = await openPage();
    const posts = countSubscribePosts(page);
    await page.goto(`${server.origin}/`);
    const status = page.locator('[data-subscribe-status]');
    const consent = page.getByLabel(/^Yes, email me each new issue/);
    const email = page.getByLabel('Email address');
    await page.locator('.issue-card').first().waitFor();

    await email.fill('reader.noconsent@example.com');
    await page.getByRole('button', { name: 'Subscribe' }).click();
    await expect.poll(() => status.textContent()).toBe(CONSENT_ERROR);
    expect(await status.getAttribute('data-state')).toBe('error');
    expect(await consent.getAttribute('aria-invalid')).toBe('true');
    expect(await consent.getAttribute('aria-describedby')).toBe(await status.getAttribute('id'));
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('subscribe-consent');
    await screenshot(page.locator('.subscribe-box'), 'subscribe-error-consent');

    await email.fill('not-an-address');
    await consent.check();
    await page.getByRole('button', { name: 'Subscribe' }).click();
    await expect.poll(() => status.textContent()).toBe(EMAIL_ERROR);
    expect(await email.getAttribute('aria-invalid')).toBe('true');
    expect(await consent.getAttribute('aria-invalid')).toBeNull();
    expect(posts()).toBe(0);
  });

  it('explains a 429 with its Retry-After and never shows a raw error', async () => {
    const page = await openPage();
    await page.goto(`${server.origin}/`);
    await page.locator('.issue-card').first().waitFor();
    const status = page.locator('[data-subscribe-status]');
    const answers = [
      {
        status: 429,
        contentType: 'application/json',
        headers: { 'Retry-After': '42' },
        body: JSON.stringify({ ok: false, error: { code: 'RATE_LIMITED', message: 'Too many requests. Try again later.' } }),
      },
      { status: 502, contentType: 'text/html', body: '<html><body><h1>502 Bad Gateway</h1> [object Object]</body></html>' },
      { status: 500, contentType: 'application/json', body: JSON.stringify({ ok: false, error: { code: { nested: true } } }) },
    ];
    let next = 0;
    await page.route(`${server.origin}/api/subscribe`, (route) => route.fulfill(answers[next++]!));
    /** Submits once and waits until the script has shown its answer. */
    const submit = async () => {
      await page.getByLabel('Email address').fill('reader.limited@example.com');
      await page.getByLabel(/^Yes, email me each new issue/).check();
      await page.getByRole('button', { name: 'Subscribe' }).click();
      await page.locator('form[aria-busy="false"] [data-subscribe-status][data-state="error"]').waitFor();
    };

    await submit();
    expect(await status.textContent()).toBe('Too many attempts from your connection. Please try again in 42 seconds.');
    await screenshot(page.locator('.subscribe-box'), 'subscribe-rate-limited');

    for (let i = 0; i < 2; i++) {
      await submit();
      expect(await status.textContent()).toBe('Sorry, something went wrong on our side. Please try again later.');
    }
    expect(next).toBe(3);

    await page.unroute(`${server.origin}/api/subscribe`);
    await page.route(`${server.origin}/api/subscribe`, (route) => route.abort('connectionrefused'));
    await submit();
    expect(await status.textContent()).toBe(NETWORK_ERROR);
  });

  it('works without JavaScript: the form post comes back to the page with ?subscribed=1, and the page says so', async () => {
    const page = await openPage({ javaScript: false });
    await page.goto(`${server.origin}/`);
    // The archive's notice and the form's two outcome messages.
    expect(await page.locator('noscript').count()).toBe(2);
    expect(await page.locator('#subscribed').isVisible()).toBe(false);
    expect(await page.locator('#archive-loading').isHidden()).toBe(true);
    await page.getByLabel('Email address').fill('reader.nojs@example.com');
    await page.getByLabel(/^Yes, email me each new issue/).check();
    const responseSeen = page.waitForResponse(`${server.origin}/api/subscribe`);
    await page.getByRole('button', { name: 'Subscribe' }).click();

    const response = await responseSeen;
    expect(response.status()).toBe(303);
    // The site's own page, kept by its <meta name="referrer"> whatever Referrer-Policy its host sends.
    expect((await response.request().allHeaders()).referer).toBe(`${server.origin}/`);
    expect(response.headers().location).toBe(`${server.origin}/?subscribed=1#subscribed`);
    await page.waitForURL(`${server.origin}/?subscribed=1#subscribed`);
    // No script reads the query: the fragment makes the success message the CSS :target.
    expect(await page.locator('#subscribed').isVisible()).toBe(true);
    expect(await page.locator('#subscribe-error').isVisible()).toBe(false);
    await screenshot(page, 'nojs-subscribed');
    await expect.poll(() => subscribeLogs('forwarded').length).toBeGreaterThanOrEqual(1);
  });

  it('without JavaScript, `required` stops a missing consent tick in the browser; past it, the service answers ?subscribe_error=VALIDATION_ERROR', async () => {
    const page = await openPage({ javaScript: false });
    const posts = countSubscribePosts(page);
    const start = `${server.origin}/issue.html?slug=planning-next-years-plot`;
    await page.goto(start);
    await page.getByLabel('Email address').fill('reader.nojs.noconsent@example.com');
    await page.getByRole('button', { name: 'Subscribe' }).click();
    // The browser's own validation message; no request, no navigation.
    expect(await page.locator('#subscribe-consent:invalid').count()).toBe(1);
    expect(page.url()).toBe(start);
    expect(posts()).toBe(0);

    // An old browser, or a form pasted without `required`: the service still refuses, and says why.
    await page.locator('#subscribe-consent').evaluate((input) => input.removeAttribute('required'));
    await page.getByRole('button', { name: 'Subscribe' }).click();
    await page.waitForURL(`${start}&subscribe_error=VALIDATION_ERROR#subscribe-error`);
    expect(posts()).toBe(1);
    expect(await page.locator('#subscribe-error').isVisible()).toBe(true);
    expect(await page.locator('#subscribed').isVisible()).toBe(false);
    await screenshot(page.locator('.subscribe-box'), 'nojs-subscribe-error');

    // Back on that address with JavaScript, the page explains the code and tidies the address.
    const withScript = await openPage();
    await withScript.goto(`${start}&subscribe_error=VALIDATION_ERROR#subscribe-error`);
    const status = withScript.locator('[data-subscribe-status]');
    await expect.poll(() => status.textContent()).toBe('Please check your email address and the consent box, then try again.');
    expect(withScript.url()).toBe(start);
    await screenshot(withScript.locator('.subscribe-box'), 'subscribe-error-after-redirect');
    await withScript.goto(`${server.origin}/?subscribed=1#subscribed`);
    await expect.poll(() => withScript.locator('[data-subscribe-status]').textContent()).toBe(SUCCESS);
    expect(withScript.url()).toBe(`${server.origin}/`);
  });

  it('works from an allowed second origin through CORS, and so does the copy-paste snippet', async () => {
    const page = await openPage();
    const archiveSeen = page.waitForResponse((r) => r.url().startsWith(`${server.origin}/api/issues?`));
    await page.goto(`${allowedSite.origin}/`);
    const archive = await archiveSeen;
    expect(archive.headers()['access-control-allow-origin']).toBe(allowedSite.origin);
    await expect.poll(() => page.locator('.issue-card').count()).toBe(10);
    await page.locator('#categories').waitFor();
    await screenshot(page, 'second-origin-archive');

    await page.locator('.issue-card h2 a').first().click();
    await page.frameLocator('#issue-frame').locator('p').first().waitFor();

    await page.getByLabel('Email address').fill('reader.cors@example.com');
    await page.getByLabel(/^Yes, email me each new issue/).check();
    const subscribeSeen = page.waitForResponse(`${server.origin}/api/subscribe`);
    await page.getByRole('button', { name: 'Subscribe' }).click();
    const subscribed = await subscribeSeen;
    expect(subscribed.status()).toBe(200);
    expect(subscribed.headers()['access-control-allow-origin']).toBe(allowedSite.origin);
    await expect.poll(() => page.locator('[data-subscribe-status]').textContent()).toBe(SUCCESS);

    // examples/subscribe-form.html with its placeholder address replaced, as a site owner pastes it.
    await page.goto(`${allowedSite.origin}/snippet.html`);
    await page.getByLabel('Email address').fill('reader.snippet@example.com');
    await page.getByLabel(/^Yes, email me each new issue/).check();
    await page.getByRole('button', { name: 'Subscribe' }).click();
    await expect.poll(() => page.locator('[data-subscribe-status]').textContent()).toBe(SUCCESS);
    await screenshot(page, 'snippet-success');

    // Without JavaScript, from another origin the browser sends only the origin as Referer:
    // the visitor lands on the site's home page.
    const plain = await openPage({ javaScript: false });
    await plain.goto(`${allowedSite.origin}/snippet.html`);
    await plain.getByLabel('Email address').fill('reader.snippet.nojs@example.com');
    await plain.getByLabel(/^Yes, email me each new issue/).check();
    await plain.getByRole('button', { name: 'Subscribe' }).click();
    await plain.waitForURL(`${allowedSite.origin}/?subscribed=1#subscribed`);
  });

  it('refuses a third, unlisted origin: the archive shows its error state and subscribing is refused', async () => {
    const page = await openPage();
    await page.goto(`${unlistedSite.origin}/`);
    const error = page.locator('#archive-error');
    await error.waitFor();
    expect(await page.locator('#categories').isHidden()).toBe(true);
    expect(await page.locator('.issue-card').count()).toBe(0);
    await screenshot(page, 'third-origin-error');

    // With JavaScript: the preflight gets no CORS grant, so the POST never leaves the browser.
    const postsBefore = server.logs().filter((l) => l.event === 'request' && l.method === 'POST').length;
    const preflightsBefore = server.logs().filter((l) => l.event === 'request' && l.method === 'OPTIONS').length;
    await page.getByLabel('Email address').fill('reader.unlisted@example.com');
    await page.getByLabel(/^Yes, email me each new issue/).check();
    await page.getByRole('button', { name: 'Subscribe' }).click();
    await expect.poll(() => page.locator('[data-subscribe-status]').textContent()).toBe(NETWORK_ERROR);
    await screenshot(page.locator('.subscribe-box'), 'third-origin-subscribe-refused');
    await expect
      .poll(() => server.logs().filter((l) => l.event === 'request' && l.method === 'OPTIONS').length)
      .toBeGreaterThan(preflightsBefore);
    expect(server.logs().filter((l) => l.event === 'request' && l.method === 'POST').length).toBe(postsBefore);

    // A plain form post is a "simple" request with no preflight: the service itself says 403.
    await page.getByLabel('Email address').fill('reader.unlisted@example.com');
    await page.getByLabel(/^Yes, email me each new issue/).check();
    const refusedSeen = page.waitForResponse(`${server.origin}/api/subscribe`);
    await page.locator('form[data-newsletter-subscribe]').evaluate((form) => (form as HTMLFormElement).submit());
    const refused = await refusedSeen;
    expect(refused.status()).toBe(403);
    expect((await refused.request().allHeaders()).origin).toBe(unlistedSite.origin);
    // Raw JSON would mean nothing to a visitor without JavaScript: the service answers with a page in words.
    expect(refused.headers()['content-type']).toBe('text/html; charset=UTF-8');
    await page.waitForURL(`${server.origin}/api/subscribe`);
    expect(await page.locator('h1').textContent()).toBe('Subscription not sent');
    await screenshot(page, 'third-origin-nojs-refused-page');
    await expect.poll(() => subscribeLogs('rejected').some((l) => l.reason === 'FORBIDDEN_ORIGIN')).toBe(true);
  });
});
