import { execFile } from 'node:child_process';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runSiteBuild, startFolderHost } from './static-site-support.js';
import { buildServer, freePort, launchBrowser, ROOT, startDemoServer, startRefusingProxy, type DemoServer, type RefusingProxy, type StaticSite } from './support.js';

/*
 * What outside checkers say of the pages: the Nu Html Checker on the demo's pages as served and
 * on every page of a static site built from the demo, and Chromium's layout-shift entries (the
 * CLS a Lighthouse run reports) while the archive and an issue load.
 */
const OUT = join(ROOT, 'test-output', 'page-quality');
const VNU_JAR = join(createRequire(import.meta.url).resolve('vnu-jar'), '..', 'build', 'dist', 'vnu.jar');
const ISSUE_SLUG = 'planning-next-years-plot';
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
const contexts: BrowserContext[] = [];

beforeAll(async () => {
  await rm(OUT, { recursive: true, force: true });
  await mkdir(OUT, { recursive: true });
  await buildServer();
  host = await startFolderHost('127.0.0.2', join(OUT, 'static'));
  server = await startDemoServer(await freePort('127.0.0.1'), {
    ALLOWED_ORIGINS: host.origin,
    READ_BUDGET_PER_MINUTE: '100000',
    READ_BUDGET_PER_CLIENT_PER_MINUTE: '100000',
  });
  await runSiteBuild(server.origin, `${host.origin}/`, join(OUT, 'static'));
  offMachine = await startRefusingProxy([server.origin, host.origin].map((origin) => new URL(origin).hostname));
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

async function openPage(viewport: { width: number; height: number }): Promise<Page> {
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
    const demo = join(OUT, 'demo');
    await mkdir(demo, { recursive: true });
    for (const path of ['index.html', 'issue.html']) {
      const response = await fetch(`${server.origin}/${path}`);
      expect(response.status).toBe(200);
      await writeFile(join(demo, path), await response.text());
    }
    const messages = await nuHtmlChecker([demo, join(OUT, 'static')]);
    const errors = messages.filter((message) => message.type === 'error' || message.subType === 'fatal');
    expect(errors.map((error) => `${error.url.replace(`file:${OUT}/`, '')}:${error.lastLine}: ${error.message}`)).toEqual([]);
    // The checker read every page: 2 of the demo's and the static site's.
    expect(messages.every((message) => message.type !== 'non-document-error')).toBe(true);
  });
});

describe.each(VIEWPORTS)(`layout shift while the demo loads ($name, the API ${API_DELAY_MS} ms away)`, (viewport) => {
  it(`stays under ${CLS_TARGET} on the archive`, async () => {
    const page = await openPage(viewport);
    await page.goto(`${server.origin}/`);
    await page.locator('.issue-card').first().waitFor();
    await page.locator('#categories').waitFor();
    const cls = await cumulativeLayoutShift(page);
    console.log(`CLS archive ${viewport.name}: ${cls.toFixed(4)}`);
    expect(cls).toBeLessThan(CLS_TARGET);
  });

  it(`stays under ${CLS_TARGET} on an issue page`, async () => {
    const page = await openPage(viewport);
    await page.goto(`${server.origin}/issue.html?slug=${ISSUE_SLUG}`);
    await page.locator('#issue').waitFor();
    await page.waitForFunction(() => (document.getElementById('issue-frame') as HTMLIFrameElement).style.height !== '');
    const cls = await cumulativeLayoutShift(page);
    console.log(`CLS issue ${viewport.name}: ${cls.toFixed(4)}`);
    expect(cls).toBeLessThan(CLS_TARGET);
  });
});
