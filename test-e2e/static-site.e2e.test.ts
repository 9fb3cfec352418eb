import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runSiteBuild, startFolderHost } from './static-site-support.js';
import {
  buildServer,
  freePort,
  launchBrowser,
  openVisitorPage,
  ROOT,
  SCREENSHOT_DIR,
  startDemoServer,
  startRefusingProxy,
  type DemoServer,
  type RefusingProxy,
  type StaticSite,
} from './support.js';

const OUT = join(ROOT, 'test-output', 'static-site');
const LATEST = { slug: 'planning-next-years-plot', subject: "Planning Next Year's Plot" };

let server: DemoServer;
let host: StaticSite;
let offMachine: RefusingProxy;
let browser: Browser;
let buildSummary: string;
const contexts: BrowserContext[] = [];

beforeAll(async () => {
  await mkdir(SCREENSHOT_DIR, { recursive: true });
  await rm(OUT, { recursive: true, force: true });
  await buildServer();
  // The host first: its origin is the site's URL and must be allowed by the service before the build.
  host = await startFolderHost('127.0.0.2', OUT);
  const port = await freePort('127.0.0.1');
  // The build reads every issue from one address against a cold service: as the README says
  // for `npm run site:build`, the read budget is raised for it.
  server = await startDemoServer(port, {
    ALLOWED_ORIGINS: host.origin,
    READ_BUDGET_PER_MINUTE: '100000',
    READ_BUDGET_PER_CLIENT_PER_MINUTE: '100000',
  });
  buildSummary = await runSiteBuild(server.origin, `${host.origin}/`, OUT);
  offMachine = await startRefusingProxy([server.origin, host.origin].map((o) => new URL(o).hostname));
  browser = await launchBrowser();
});

afterEach(async () => {
  await Promise.all(contexts.splice(0).map((context) => context.close()));
});

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await host?.close();
  await offMachine?.close();
});

async function openPage(javaScript: boolean): Promise<Page> {
  return openVisitorPage(browser, offMachine.proxy, contexts, javaScript);
}

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(SCREENSHOT_DIR, `${name}.png`), fullPage: true });
}

describe('the static site built by npm run site:build, in Chromium', () => {
  it('builds from the demo service and says what it wrote', () => {
    expect(buildSummary).toMatch(/^wrote \d+ files \(60 pages, \d+ bytes\) for 48 issues/);
    expect(buildSummary).toMatch(/site digest: [0-9a-f]{64}/);
  });

  it.each([false, true])('shows the archive as links with their pictures (JavaScript %s)', async (javaScript) => {
    const page = await openPage(javaScript);
    await page.goto(`${host.origin}/`);
    expect(await page.title()).toBe('Archive · The Field Notes');
    const links = page.locator('.issue-list h2 a');
    expect(await links.count()).toBe(10);
    expect(await links.first().textContent()).toBe(LATEST.subject);
    expect(await page.getByText('needs JavaScript').count()).toBe(0);
    // Every thumbnail loaded (a broken image has no natural width).
    const images = page.locator('.thumb img');
    await expect.poll(() => images.evaluateAll((all) => all.every((img) => (img as HTMLImageElement).complete))).toBe(true);
    expect(await images.evaluateAll((all) => all.filter((img) => (img as HTMLImageElement).naturalWidth === 0).length)).toBe(0);
    await shot(page, `static-archive-${javaScript ? 'js' : 'nojs'}`);

    await page.getByRole('link', { name: 'Older issues →' }).click();
    await page.waitForURL(`${host.origin}/page/2/`);
    expect(await links.count()).toBe(10);
    await page.locator('.categories').getByRole('link', { name: 'Interviews' }).click();
    await page.waitForURL(`${host.origin}/categories/interviews/`);
    expect(await page.locator('h1').textContent()).toBe('Interviews');
  });

  it.each([false, true])('shows an issue page with the letter, its title once and its head tags (JavaScript %s)', async (javaScript) => {
    const page = await openPage(javaScript);
    await page.goto(`${host.origin}/`);
    await page.getByRole('link', { name: LATEST.subject }).click();
    await page.waitForURL(`${host.origin}/issues/${LATEST.slug}/`);
    expect(await page.title()).toBe(`${LATEST.subject} · The Field Notes`);
    expect(await page.locator('h1').allTextContents()).toEqual([LATEST.subject]);
    expect(await page.locator('.letter p').first().isVisible()).toBe(true);
    expect((await page.locator('.letter').textContent())!.length).toBeGreaterThan(500);
    expect(await page.locator('iframe').count()).toBe(0);
    expect(await page.locator('link[rel="canonical"]').getAttribute('href')).toBe(`${host.origin}/issues/${LATEST.slug}/`);
    expect(await page.locator('meta[property="og:image"]').getAttribute('content')).toBe(
      // The demo links its thumbnails at the origin it really listens on, whatever the port.
      `${server.origin}/thumbnails/${LATEST.slug}.svg`,
    );
    // The letter's links open in a new tab that cannot reach back.
    expect(await page.locator('.letter a').first().getAttribute('rel')).toBe('noopener noreferrer');
    await shot(page, `static-issue-${javaScript ? 'js' : 'nojs'}`);
  });

  it('answers a missing page with its 404 page', async () => {
    const page = await openPage(false);
    const response = await page.goto(`${host.origin}/issues/no-such-issue/`);
    expect(response?.status()).toBe(404);
    expect(await page.locator('h1').textContent()).toBe('Page not found');
    await shot(page, 'static-404-nojs');
  });

  it('subscribes without JavaScript: the form posts to the service and comes back to the page, which says so', async () => {
    const page = await openPage(false);
    const issueUrl = `${host.origin}/issues/${LATEST.slug}/`;
    await page.goto(issueUrl);
    await page.getByLabel('Email address').fill('reader.static@example.com');
    await page.getByLabel(/^Yes, email me each new issue/).check();
    const responseSeen = page.waitForResponse(`${server.origin}/api/subscribe`);
    await page.getByRole('button', { name: 'Subscribe' }).click();
    const response = await responseSeen;
    expect(response.status()).toBe(303);
    // Across origins the Referer is the site's origin only (strict-origin-when-cross-origin), so the
    // visitor lands on the archive; SUBSCRIBE_REDIRECT_URL names a thank-you page instead.
    expect(response.headers()['location']).toBe(`${host.origin}/?subscribed=1#subscribed`);
    await page.waitForURL(`${host.origin}/?subscribed=1#subscribed`);
    expect(await page.locator('#subscribed').isVisible()).toBe(true);
    await shot(page, 'static-nojs-subscribed');
  });

  it('subscribes with JavaScript through the enhancement script, across origins', async () => {
    const page = await openPage(true);
    await page.goto(`${host.origin}/`);
    await page.getByLabel('Email address').fill('reader.static.js@example.com');
    await page.getByLabel(/^Yes, email me each new issue/).check();
    await page.getByRole('button', { name: 'Subscribe' }).click();
    await expect
      .poll(() => page.locator('[data-subscribe-status]').textContent())
      .toBe('Thank you! You are subscribed. Look out for the next issue in your inbox.');
    expect(page.url()).toBe(`${host.origin}/`);
  });
});
