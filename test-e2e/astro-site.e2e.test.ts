import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { createConnection, createServer as createNetServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startFolderHost } from './static-site-support.js';
import {
  buildServer,
  twoFreePorts,
  launchBrowser,
  listen,
  openVisitorPage,
  ROOT,
  SCREENSHOT_DIR,
  startDemoServer,
  startRefusingProxy,
  type DemoServer,
  type RefusingProxy,
  type StaticSite,
} from './support.js';

/*
 * examples/astro, as a site owner runs it against the demo service: built static (served from a
 * folder, as a static host does) and built for @astrojs/node (run as its own server), both checked
 * in Chromium; then the server build under a burst of 100 requests at once.
 */
const EXAMPLE = join(ROOT, 'examples', 'astro');
const ASTRO = join(EXAMPLE, 'node_modules', 'astro', 'astro.js');
const LATEST = { slug: 'planning-next-years-plot', subject: "Planning Next Year's Plot" };
/** src/lib/service.ts's MAX_IN_FLIGHT: the most requests the server build has at the service at once. */
const RENDERER_MAX_IN_FLIGHT = 8;
const BURST = 100;

const run = promisify(execFile);

let server: DemoServer;
let host: StaticSite;
let foreignHost: StaticSite;
let renderer: { origin: string; stop(): Promise<void> };
let toService: CountingProxy;
let offMachine: RefusingProxy;
let browser: Browser;
const buildSeconds: Record<string, number> = {};
const contexts: BrowserContext[] = [];

interface CountingProxy {
  origin: string;
  /** The most connections open to the service at once, and how many were opened, since the last `reset`. */
  peak(): number;
  opened(): number;
  reset(): void;
  close(): Promise<void>;
}

/** A TCP relay in front of the service that counts the connections a client opens through it. */
async function startCountingProxy(target: string): Promise<CountingProxy> {
  const { hostname, port } = new URL(target);
  const sockets = new Set<Socket>();
  let open = 0;
  let peak = 0;
  let opened = 0;
  const relay = createNetServer((client) => {
    open++;
    opened++;
    peak = Math.max(peak, open);
    const upstream = createConnection({ host: hostname, port: Number(port) });
    sockets.add(client).add(upstream);
    client.pipe(upstream).pipe(client);
    const done = () => {
      if (!sockets.delete(client)) return;
      sockets.delete(upstream);
      open--;
      upstream.destroy();
      client.destroy();
    };
    client.on('close', done).on('error', done);
    upstream.on('close', done).on('error', done);
  });
  const bound = await listen(relay, '127.0.0.1');
  return {
    origin: `http://127.0.0.1:${bound.port}`,
    peak: () => peak,
    opened: () => opened,
    reset: () => {
      peak = open;
      opened = 0;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        relay.close(() => resolve());
      }),
  };
}

/** `astro build` in examples/astro, as its package scripts run it; returns the seconds it took. */
async function astroBuild(env: Record<string, string>): Promise<number> {
  const started = performance.now();
  await run(process.execPath, [ASTRO, 'build'], {
    cwd: EXAMPLE,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ASTRO_TELEMETRY_DISABLED: '1', ...env },
    timeout: 240_000,
    maxBuffer: 16 * 1024 * 1024,
  });
  return (performance.now() - started) / 1000;
}

/** The server build (`npm run start:server`) on `port`, reading the service at `service`. */
async function startRenderer(port: number, service: string) {
  const child: ChildProcess = spawn(process.execPath, ['dist-server/server/entry.mjs'], {
    cwd: EXAMPLE,
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: String(port), NEWSLETTER_BFF_URL: service },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const deadline = Date.now() + 30_000;
  while (!output.includes('Server listening')) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`the Astro server did not start: ${output}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    origin: `http://127.0.0.1:${port}`,
    output: () => output,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

beforeAll(async () => {
  if (!existsSync(ASTRO)) throw new Error('examples/astro is not installed: run `npm ci` in examples/astro first (.ci/run does)');
  await mkdir(SCREENSHOT_DIR, { recursive: true });
  await buildServer();
  // Every origin the pages are served from must be known (and allowed by the service) before the builds.
  host = await startFolderHost('127.0.0.3', join(EXAMPLE, 'dist'));
  foreignHost = await startFolderHost('127.0.0.4', join(EXAMPLE, 'dist'));
  const [rendererPort, serverPort] = await twoFreePorts();
  const rendererOrigin = `http://127.0.0.1:${rendererPort}`;
  server = await startDemoServer(serverPort, { ALLOWED_ORIGINS: `${host.origin},${rendererOrigin}` });
  buildSeconds.static = await astroBuild({ NEWSLETTER_BFF_URL: server.origin, SITE_URL: `${host.origin}/` });
  buildSeconds.server = await astroBuild({ NEWSLETTER_BFF_URL: server.origin, SITE_URL: `${rendererOrigin}/`, NEWSLETTER_SSR: '1' });
  console.log(`examples/astro built in ${buildSeconds.static.toFixed(1)} s (static) and ${buildSeconds.server.toFixed(1)} s (server)`);
  toService = await startCountingProxy(server.origin);
  renderer = await startRenderer(rendererPort, toService.origin);
  offMachine = await startRefusingProxy(
    [server.origin, host.origin, foreignHost.origin, rendererOrigin].map((origin) => new URL(origin).hostname),
  );
  browser = await launchBrowser();
}, 600_000);

afterEach(async () => {
  await Promise.all(contexts.splice(0).map((context) => context.close()));
});

afterAll(async () => {
  await browser?.close();
  await renderer?.stop();
  await toService?.close();
  await server?.stop();
  await host?.close();
  await foreignHost?.close();
  await offMachine?.close();
});

function openPage(javaScript: boolean): Promise<Page> {
  return openVisitorPage(browser, offMachine.proxy, contexts, javaScript);
}

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(SCREENSHOT_DIR, `${name}.png`), fullPage: true });
}

/** The service's own answer for an issue, to hold the pages to. */
async function serviceIssue(slug: string) {
  const response = await fetch(`${server.origin}/api/issues/${slug}`);
  return (
    (await response.json()) as {
      data: { subject: string; newer?: { slug: string; subject: string } | null; older?: { slug: string; subject: string } | null };
    }
  ).data;
}

const builds = [
  { name: 'static', origin: () => host.origin },
  { name: 'server', origin: () => renderer.origin },
] as const;

describe.each(builds)('examples/astro, the $name build, in Chromium', ({ name, origin }) => {
  it.each([false, true])('shows the archive ten issues a page, with the pager and the categories (JavaScript %s)', async (javaScript) => {
    const page = await openPage(javaScript);
    await page.goto(`${origin()}/`);
    expect(await page.title()).toBe('Archive · The Field Notes');
    const links = page.locator('.issue-list h2 a');
    expect(await links.count()).toBe(10);
    expect(await links.first().textContent()).toBe(LATEST.subject);
    await shot(page, `astro-${name}-archive-${javaScript ? 'js' : 'nojs'}`);

    await page.getByRole('link', { name: 'Older issues →' }).click();
    await page.waitForURL(`${origin()}/page/2/`);
    expect(await links.count()).toBe(10);
    expect(await page.locator('.pager span').textContent()).toBe('Page 2 of 5');
    await page
      .locator('.categories')
      .getByRole('link', { name: /^Interviews/ })
      .click();
    await page.waitForURL(`${origin()}/categories/interviews/`);
    expect(await page.locator('h1').textContent()).toBe('Interviews');
    const listed = await links.count();
    expect(listed).toBeGreaterThan(0);
    expect(await page.locator('.summary').textContent()).toMatch(new RegExp(`^${listed} issues · page 1 of 1$`));
  });

  it('shows an issue with its letter, its title once, and links to the newer and older issue where the service names them', async () => {
    const page = await openPage(false);
    await page.goto(`${origin()}/page/2/`);
    const second = page.locator('.issue-list h2 a').first();
    const subject = (await second.textContent())!;
    await second.click();
    const slug = new URL(page.url()).pathname.split('/')[2]!;
    expect(await page.title()).toBe(`${subject} · The Field Notes`);
    expect(await page.locator('h1').allTextContents()).toEqual([subject]);
    expect((await page.locator('.letter').textContent())!.length).toBeGreaterThan(300);
    expect(await page.locator('.letter script, .letter iframe').count()).toBe(0);
    expect(await page.locator('link[rel="canonical"]').getAttribute('href')).toBe(`${origin()}/issues/${slug}/`);
    const detail = await serviceIssue(slug);
    const pager = page.locator('nav[aria-label="Issues"]');
    if (detail.newer === undefined && detail.older === undefined) {
      // A service without neighbours on its issue pages: the page shows none.
      expect(await pager.count()).toBe(0);
    } else {
      expect(await pager.locator('a[rel="prev"]').textContent()).toBe(`← ${detail.newer!.subject}`);
      expect(await pager.locator('a[rel="next"]').textContent()).toBe(`${detail.older!.subject} →`);
    }
    await shot(page, `astro-${name}-issue`);
  });

  it('answers an issue that does not exist with its 404 page', async () => {
    const page = await openPage(false);
    const response = await page.goto(`${origin()}/issues/no-such-issue/`);
    expect(response?.status()).toBe(404);
    expect(await page.locator('h1').textContent()).toBe('Page not found');
  });

  it('subscribes without JavaScript from page 2 and comes back to page 2 (the form’s returnTo), which says so', async () => {
    const page = await openPage(false);
    await page.goto(`${origin()}/page/2/`);
    await page.getByLabel('Email address').fill(`reader.astro.${name}@example.com`);
    await page.getByLabel(/^Yes, email me each new issue/).check();
    // The form posts to the service the pages read (the server build reads it through the counting relay).
    const answer = page.waitForResponse((response) => new URL(response.url()).pathname === '/api/subscribe');
    await page.getByRole('button', { name: 'Subscribe' }).click();
    expect((await answer).status()).toBe(303);
    await page.waitForURL(`${origin()}/page/2/?subscribed=1#subscribed`);
    expect(await page.locator('#subscribed').isVisible()).toBe(true);
    await shot(page, `astro-${name}-nojs-subscribed`);
  });

  it('subscribes with JavaScript through the kit’s script, bundled by the component', async () => {
    const page = await openPage(true);
    await page.goto(`${origin()}/categories/community/`);
    await page.getByLabel('Email address').fill(`reader.astro.${name}.js@example.com`);
    await page.getByLabel(/^Yes, email me each new issue/).check();
    await page.getByRole('button', { name: 'Subscribe' }).click();
    await expect
      .poll(() => page.locator('[data-subscribe-status]').textContent())
      .toBe('Thank you! You are subscribed. Look out for the next issue in your inbox.');
    expect(page.url()).toBe(`${origin()}/categories/community/`);
  });
});

describe('examples/astro on an origin the service does not allow', () => {
  it('shows a visitor without JavaScript a page saying the subscription was not sent, not JSON', async () => {
    const page = await openPage(false);
    await page.goto(`${foreignHost.origin}/`);
    await page.getByLabel('Email address').fill('reader.elsewhere@example.com');
    await page.getByLabel(/^Yes, email me each new issue/).check();
    const answer = page.waitForResponse(`${server.origin}/api/subscribe`);
    await page.getByRole('button', { name: 'Subscribe' }).click();
    expect((await answer).status()).toBe(403);
    expect(await page.locator('h1').textContent()).toBe('Subscription not sent');
    expect(page.url()).toBe(`${server.origin}/api/subscribe`);
    await shot(page, 'astro-foreign-origin-nojs');
  });
});

describe('the server build under a crowd', () => {
  it(`answers a burst of ${BURST} requests at once, for as many pages, without an error, with at most ${RENDERER_MAX_IN_FLIGHT} connections to the service`, async () => {
    const archive = (await (await fetch(`${server.origin}/api/issues?limit=100`)).json()) as { data: { slug: string; subject: string }[] };
    const pages = [
      ...archive.data.map((issue) => ({ path: `/issues/${issue.slug}/`, title: `${issue.subject} · The Field Notes` })),
      ...[1, 2, 3, 4, 5].map((number) => ({
        path: number === 1 ? '/' : `/page/${number}/`,
        title: number === 1 ? 'Archive · The Field Notes' : `Archive, page ${number} · The Field Notes`,
      })),
    ];
    const requests = Array.from({ length: BURST }, (_, index) => pages[index % pages.length]!);
    toService.reset();
    const started = performance.now();
    const answers = await Promise.all(
      requests.map(async ({ path }) => {
        const sent = performance.now();
        const response = await fetch(`${renderer.origin}${path}`);
        const body = await response.text();
        return { status: response.status, body, ms: performance.now() - sent };
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    const latencies = answers.map((answer) => answer.ms).sort((a, b) => a - b);
    console.log(
      `${BURST} at once: all answered in ${seconds.toFixed(2)} s (median ${latencies[BURST / 2]!.toFixed(0)} ms, slowest ${latencies.at(-1)!.toFixed(0)} ms); ` +
        `the renderer opened ${toService.opened()} connections to the service, at most ${toService.peak()} at once`,
    );
    expect(answers.map((answer) => answer.status)).toEqual(requests.map(() => 200));
    answers.forEach((answer, index) => {
      expect(answer.body).toContain(`<title>${escapeHtml(requests[index]!.title)}</title>`);
    });
    expect(answers.filter((answer) => /internal server error/i.test(answer.body))).toEqual([]);
    expect(toService.peak()).toBeLessThanOrEqual(RENDERER_MAX_IN_FLIGHT);
  });
});

describe('the server build when the service cannot be read', () => {
  it('answers 503 with Retry-After and a page saying so, not a 500 nor a 200 with half a page', async () => {
    // A port nothing listens on: every read of the service fails at once.
    const [dead, port] = await twoFreePorts();
    const cut = await startRenderer(port, `http://127.0.0.1:${dead}`);
    try {
      for (const path of ['/', '/issues/planning-next-years-plot/', '/categories/interviews/']) {
        const response = await fetch(`${cut.origin}${path}`);
        expect(response.status).toBe(503);
        expect(response.headers.get('retry-after')).toBe('30');
        expect(await response.text()).toContain('<h1>Back in a moment</h1>');
      }
    } finally {
      await cut.stop();
    }
  });
});

describe('the example against Astro’s own types', () => {
  it('typechecks: newsletterLoader fits defineCollection, the typed client’s answers fit the pages’ code', async () => {
    const check = await run(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '--noEmit', '-p', EXAMPLE], {
      cwd: ROOT,
      timeout: 120_000,
    }).catch((error: { stdout?: string; code?: number }) => ({ stdout: error.stdout ?? '', code: error.code }));
    expect(check.stdout).toBe('');
  });
});

function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}
