import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { createServer as createNetServer, type AddressInfo, type Server as NetServer } from 'node:net';
import { extname, join, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const SITE_DIR = join(ROOT, 'examples', 'site');
export const SCREENSHOT_DIR = join(ROOT, 'test-output', 'screenshots');

/** Debian's `chromium` package (.ci/run installs it); no browser download. */
const CHROMIUM_PATH = '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

const run = promisify(execFile);

/** Compiles src/ to dist/ exactly as `npm start` does. */
export async function buildServer(): Promise<void> {
  await run(join(ROOT, 'node_modules', '.bin', 'tsc'), ['-p', 'tsconfig.build.json'], { cwd: ROOT, timeout: 120_000 });
}

export interface DemoServer {
  origin: string;
  /** The server's JSON log lines so far (stdout is flushed every 250 ms). */
  logs(): Record<string, unknown>[];
  stop(): Promise<void>;
}

/**
 * `node dist/cli.js` (the `newsletter-bff` command) in demo mode on a free loopback port. The environment is built from
 * scratch, so no NEWSLETTER_API_KEY or SUBSCRIBE_REDIRECT_URL of the caller's can leak in.
 */
export async function startDemoServer(port: number, env: Record<string, string>): Promise<DemoServer> {
  const child = spawn(process.execPath, ['dist/cli.js'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: String(port), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const stop = () => stopProcess(child);
  try {
    await waitFor(
      () => /listening on http:\/\/127\.0\.0\.1:\d+/.test(stdout),
      20_000,
      () => {
        if (child.exitCode !== null) throw new Error(`demo server exited (${child.exitCode}): ${stderr || stdout}`);
      },
    );
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    origin: `http://127.0.0.1:${port}`,
    logs: () =>
      stdout
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as Record<string, unknown>),
    stop,
  };
}

export interface StaticSite {
  origin: string;
  close(): Promise<void>;
}

export const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
  '.xml': 'application/xml; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
};

/**
 * examples/site as a site owner would host it on another origin: its own config.js pointing
 * at the service, and the demo's CSP with the service's origin added to connect-src and
 * form-action. /snippet.html is examples/subscribe-form.html pasted into a bare page.
 * Binds `host` (127.0.0.2, …: another loopback address); where that is not possible, another
 * port of 127.0.0.1, which is another origin all the same.
 */
export async function startStaticSite(host: string, bffOrigin: string): Promise<StaticSite> {
  const csp = [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' https: data:",
    `connect-src 'self' ${bffOrigin}`,
    "frame-src 'self'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
    `form-action 'self' ${bffOrigin}`,
    "object-src 'none'",
  ].join('; ');
  const server = createServer(async (request, response) => {
    const path = new URL(request.url ?? '/', 'http://site.invalid').pathname;
    let body: string | Buffer;
    let type = 'text/html; charset=utf-8';
    try {
      if (path === '/config.js') {
        body = `window.NEWSLETTER_BFF_URL = ${JSON.stringify(bffOrigin)};\n`;
        type = CONTENT_TYPES['.js']!;
      } else if (path === '/snippet.html') {
        const snippet = await readFile(join(ROOT, 'examples', 'subscribe-form.html'), 'utf8');
        body =
          '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Snippet</title>' +
          '<link rel="stylesheet" href="/style.css"></head><body><main class="wrap" style="max-width:26rem;padding-top:2rem">' +
          snippet.replaceAll('https://newsletter-bff.example.com', bffOrigin) +
          '</main></body></html>';
      } else {
        const file = normalize(join(SITE_DIR, path.endsWith('/') ? `${path}index.html` : path));
        if (!file.startsWith(SITE_DIR + sep)) throw new Error('outside the site');
        body = await readFile(file);
        type = CONTENT_TYPES[extname(file)] ?? 'application/octet-stream';
      }
    } catch {
      response.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found');
      return;
    }
    response.writeHead(200, { 'Content-Type': type, 'Content-Security-Policy': csp, 'Cache-Control': 'no-store' });
    response.end(request.method === 'HEAD' ? undefined : body);
  });
  const bound = await listen(server, host).catch(() => listen(server, '127.0.0.1'));
  return {
    origin: `http://${bound.address}:${bound.port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve()).closeAllConnections()),
  };
}

/** Chromium with exactly the flags of issue 8; Playwright gives every launch a fresh temporary profile. */
export function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: CHROMIUM_ARGS, timeout: 30_000 });
}

/**
 * A page in a fresh context as a visitor has it (1200×900, en-GB, UTC), with every off-machine
 * request sent to `proxy`. The context goes into `contexts`, for the suite to close after each test.
 */
export async function openVisitorPage(
  browser: Browser,
  proxy: RefusingProxy['proxy'],
  contexts: BrowserContext[],
  javaScript: boolean,
): Promise<Page> {
  const context = await browser.newContext({
    javaScriptEnabled: javaScript,
    viewport: { width: 1200, height: 900 },
    locale: 'en-GB',
    timezoneId: 'UTC',
    proxy,
  });
  context.setDefaultTimeout(15_000);
  contexts.push(context);
  return context.newPage();
}

export interface RefusingProxy {
  /** Browser context options: every host but the loopback ones goes to this proxy, which hangs up. */
  proxy: { server: string; bypass: string };
  close(): Promise<void>;
}

/**
 * Keeps every page on loopback: anything off-machine (a letter's own links and images) goes
 * to a "proxy" that closes each connection at once, so nothing leaves the host
 * and nothing waits on DNS. A proxy rather than `context.route()`, because with request
 * interception on, Playwright answers CORS preflights itself and the service's CORS would
 * go untested.
 */
export async function startRefusingProxy(loopbackHosts: string[]): Promise<RefusingProxy> {
  const server = createNetServer((socket) => socket.destroy());
  const { port } = await listen(server, '127.0.0.1');
  return {
    proxy: { server: `http://127.0.0.1:${port}`, bypass: loopbackHosts.join(',') },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export function listen(server: Server | NetServer, host: string): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => {
      server.off('error', reject);
      resolve(server.address() as AddressInfo);
    });
  });
}

// The service's address must be known before it starts.
export { freePort, twoFreePorts } from '../test/free-port.js';

async function waitFor(ready: () => boolean, timeoutMs: number, check: () => void): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!ready()) {
    check();
    if (Date.now() > deadline) throw new Error(`not ready within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** SIGTERM (the server's graceful shutdown), then SIGKILL if it has not exited in 5 s. */
async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}
