import { serveStatic } from '@hono/node-server/serve-static';
import type { MiddlewareHandler } from 'hono';
import { readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const SITE_KEY_LINE = "window.NEWSLETTER_TURNSTILE_SITE_KEY = '';";

/**
 * The example site (examples/site beside dist/) for demo mode. With TURNSTILE_SITE_KEY set, its
 * config.js is served with the key filled in, so the subscribe form shows the widget; the file
 * on disk stays the template a site owner copies.
 */
export function createDemoSite(turnstileSiteKey: string | undefined): MiddlewareHandler {
  const root = fileURLToPath(new URL('../examples/site', import.meta.url));
  // serveStatic wants the root relative to the working directory.
  const files = serveStatic({ root: relative(process.cwd(), root) });
  if (!turnstileSiteKey) return files;
  return async function serveDemoSite(c, next) {
    if (c.req.path !== '/config.js') return files(c, next);
    const template = await readFile(join(root, 'config.js'), 'utf8');
    // The key is letters, digits, `_` and `-` (config checks it), so it is safe in a JS string.
    const body = template.replace(SITE_KEY_LINE, `window.NEWSLETTER_TURNSTILE_SITE_KEY = ${JSON.stringify(turnstileSiteKey)};`);
    return c.body(body, 200, { 'Content-Type': 'text/javascript; charset=utf-8', 'Cache-Control': 'no-cache' });
  };
}
