import { execFile } from 'node:child_process';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { promisify } from 'node:util';
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

const VNU_JAR = join(createRequire(import.meta.url).resolve('vnu-jar'), '..', 'build', 'dist', 'vnu.jar');
/** Lighthouse's mobile viewport and the browser tests' desktop one. */
const VIEWPORTS = [
  { name: 'mobile', width: 412, height: 823 },
  { name: 'desktop', width: 1200, height: 900 },
] as const;
/**
 * The API's answers are held back this long, so they arrive after the page's first paint, as on
 * a real connection; over loopback they would come before it and nothing could be seen to move.
 */
const API_DELAY_MS = 400;
const CLS_TARGET = 0.1;

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
  const port = await freePort();
  // Every setting but the allowed origin at its default: the build reads every issue from one
  // address against a cold service, as `npm run site:build` does out of the box.
  server = await startDemoServer(port, { ALLOWED_ORIGINS: host.origin });
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
    expect(buildSummary).toMatch(/^wrote \d+ files \(61 pages, \d+ bytes\) for 48 issues/);
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

  it('searches from the archive’s box: the search page shows the service’s matches, linked to the built pages', async () => {
    const expected = (await (await fetch(`${server.origin}/api/issues?q=garden&limit=20`)).json()) as {
      data: { slug: string; subject: string }[];
      meta: { total: number };
    };
    expect(expected.meta.total).toBeGreaterThan(20);
    const page = await openPage(true);
    await page.goto(`${host.origin}/`);
    await page.getByLabel('Search the archive').fill('garden');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(`${host.origin}/search/?q=garden`);
    await expect
      .poll(() => page.locator('#search-results .issue-card h2').allTextContents())
      .toEqual(expected.data.map((issue) => issue.subject));
    expect(await page.locator('#search-summary').textContent()).toBe(`${expected.meta.total} issues match “garden”`);
    expect(await page.locator('#search-all').isHidden()).toBe(true);
    await page.getByRole('button', { name: 'More results' }).click();
    await expect.poll(() => page.locator('#search-results .issue-card').count()).toBe(Math.min(40, expected.meta.total));
    await shot(page, 'static-search-js');
    await page.locator('#search-results .issue-card h2 a').first().click();
    await page.waitForURL(`${host.origin}/issues/${expected.data[0]!.slug}/`);
  });

  it('offers every issue on the search page without JavaScript, for the browser’s find', async () => {
    const page = await openPage(false);
    await page.goto(`${host.origin}/search/?q=garden`);
    expect(await page.locator('#search-all .all-issues li').count()).toBe(48);
    expect(await page.locator('#search-results').isHidden()).toBe(true);
    await shot(page, 'static-search-nojs');
  });

  it('links an issue page to the newer and older issue, and shows its reading time (JavaScript off)', async () => {
    const page = await openPage(false);
    await page.goto(`${host.origin}/issues/${LATEST.slug}/`);
    expect(await page.locator('.neighbours a').count()).toBe(1);
    expect(await page.locator('.issue-header .meta').textContent()).toMatch(/\d+ min read$/);
    await page.locator('.neighbours a[rel="next"]').click();
    await page.waitForURL(/\/issues\/[^/]+\/$/);
    expect(await page.locator('.neighbours a[rel="prev"]').textContent()).toBe(`← Newer: ${LATEST.subject}`);
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
    expect(response.headers().location).toBe(`${host.origin}/?subscribed=1#subscribed`);
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

/*
 * What outside checkers say of the pages: the Nu Html Checker on the demo's pages as served and
 * on every page of the static site, and Chromium's layout-shift entries (the CLS a Lighthouse
 * run reports) while the demo's archive and an issue load.
 */
interface VnuMessage {
  type: string;
  subType?: string;
  url: string;
  lastLine?: number;
  message: string;
}

/** The Nu Html Checker (vnu.jar, run with the machine's Java) over files and folders. */
async function nuHtmlChecker(paths: string[]): Promise<VnuMessage[]> {
  const { stderr } = await promisify(execFile)('java', ['-jar', VNU_JAR, '--format', 'json', '--skip-non-html', ...paths], {
    timeout: 120_000,
    maxBuffer: 16 * 1024 * 1024,
  }).catch((error: { stderr?: string }) => ({ stderr: error.stderr ?? '' }));
  return (JSON.parse(stderr) as { messages: VnuMessage[] }).messages;
}

async function openMeasuredPage(viewport: { width: number; height: number }): Promise<Page> {
  const context = await browser.newContext({ viewport, locale: 'en-GB', timezoneId: 'UTC', proxy: offMachine.proxy });
  context.setDefaultTimeout(15_000);
  contexts.push(context);
  await context.route(`${server.origin}/api/**`, async (route) => {
    await new Promise((resolve) => setTimeout(resolve, API_DELAY_MS));
    await route.continue();
  });
  // Every layout shift from the first paint on, as Lighthouse sums them (input-driven ones excluded).
  await context.addInitScript(() => {
    const record = window as unknown as { layoutShifts: number[] };
    record.layoutShifts = [];
    new PerformanceObserver((list) => {
      for (const entry of list.getEntries() as unknown as { value: number; hadRecentInput: boolean }[]) {
        if (!entry.hadRecentInput) record.layoutShifts.push(entry.value);
      }
    }).observe({ type: 'layout-shift', buffered: true });
  });
  return context.newPage();
}

async function cumulativeLayoutShift(page: Page): Promise<number> {
  // Late work (the frame sized to its letter, lazy thumbnails) is over once the network is quiet.
  await page.waitForLoadState('networkidle');
  const shifts = await page.evaluate(() => (window as unknown as { layoutShifts: number[] }).layoutShifts);
  return shifts.reduce((sum, value) => sum + value, 0);
}

describe('the demo pages and the static site under the Nu Html Checker', () => {
  it('have no error, as served', async () => {
    const demo = join(ROOT, 'test-output', 'demo-pages');
    await mkdir(demo, { recursive: true });
    // The pages as files, and the archive page with a search's matches in it.
    for (const [path, file] of [
      ['index.html', 'index.html'],
      ['issue.html', 'issue.html'],
      ['?q=garden', 'search.html'],
    ] as const) {
      const response = await fetch(`${server.origin}/${path}`);
      expect(response.status).toBe(200);
      await writeFile(join(demo, file), await response.text());
    }
    const messages = await nuHtmlChecker([demo, OUT]);
    const errors = messages.filter((message) => message.type === 'error' || message.subType === 'fatal');
    expect(errors.map((error) => `${error.url.replace(`file:${ROOT}`, '')}:${error.lastLine}: ${error.message}`)).toEqual([]);
    expect(messages.filter((message) => message.type === 'non-document-error')).toEqual([]);
  });
});

describe.each(VIEWPORTS)(`layout shift while the demo loads ($name, the API ${API_DELAY_MS} ms away)`, (viewport) => {
  it(`stays under ${CLS_TARGET} on the archive`, async () => {
    const page = await openMeasuredPage(viewport);
    await page.goto(`${server.origin}/`);
    await page.locator('.issue-card').first().waitFor();
    await page.locator('#categories').waitFor();
    const cls = await cumulativeLayoutShift(page);
    console.log(`CLS archive ${viewport.name}: ${cls.toFixed(4)}`);
    expect(cls).toBeLessThan(CLS_TARGET);
  });

  it(`stays under ${CLS_TARGET} on an issue page`, async () => {
    const page = await openMeasuredPage(viewport);
    await page.goto(`${server.origin}/issue.html?slug=${LATEST.slug}`);
    await page.locator('#issue').waitFor();
    await page.waitForFunction(() => (document.getElementById('issue-frame') as HTMLIFrameElement).style.height !== '');
    const cls = await cumulativeLayoutShift(page);
    console.log(`CLS issue ${viewport.name}: ${cls.toFixed(4)}`);
    expect(cls).toBeLessThan(CLS_TARGET);
  });
});
