import type { MiddlewareHandler } from 'hono';
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { extname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { brotliCompress, constants as zlibConstants, gzip } from 'node:zlib';
import { ifNoneMatchMatches } from '../core/http/read-reply.js';
import { renderSearchPage } from './search-page.js';

const SITE_KEY_LINE = "window.NEWSLETTER_TURNSTILE_SITE_KEY = '';";

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.ico': 'image/x-icon',
  '.png': 'image/png',
  '.txt': 'text/plain; charset=utf-8',
};
/** Text worth compressing; images other than SVG already are. */
const COMPRESSIBLE = new Set(['.html', '.css', '.js', '.svg', '.txt']);
/**
 * Pages and config.js are checked again on every visit (an ETag makes that a 304), so an edit
 * shows at once; the other files (scripts, styles, pictures) are kept for five minutes.
 */
const REVALIDATE = 'no-cache';
const KEEP_A_WHILE = 'public, max-age=300';

interface Variant {
  body: Uint8Array<ArrayBuffer>;
  etag: string;
}

interface SiteFile {
  type: string;
  cacheControl: string;
  identity: Variant;
  gzip?: Variant;
  br?: Variant;
}

export interface DemoSiteOptions {
  /**
   * The service's own routes, in process (the app's `request`, with the visitor's request's
   * bindings): search results are rendered with them for a page read without JavaScript.
   */
  api?: (path: string, env: unknown) => Promise<Response>;
}

/**
 * The example site (examples/site beside dist/) for demo mode, read once into memory: every file
 * with its type, `Cache-Control`, a strong `ETag` (a matching `If-None-Match` is a 304) and, for
 * text, gzip and Brotli forms chosen by `Accept-Encoding`. Paths map to the files read, so no
 * request reaches the file system. With TURNSTILE_SITE_KEY set, config.js is served with the key
 * filled in, so the subscribe form shows the widget; the file on disk stays the template a site
 * owner copies. The archive page with `?q=` (the search box's GET form) comes with the matches
 * already in it (search-page.ts), so search works without JavaScript.
 */
export function createDemoSite(turnstileSiteKey: string | undefined, options: DemoSiteOptions = {}): MiddlewareHandler {
  const root = fileURLToPath(new URL('../../examples/site', import.meta.url));
  let files: Promise<Map<string, SiteFile>> | undefined;
  return async function serveDemoSite(c, next) {
    files ??= readSite(root, turnstileSiteKey);
    const path = c.req.path === '/' ? '/index.html' : c.req.path;
    const file = (await files).get(path);
    if (!file) return next();
    const q = c.req.query('q');
    if (path === '/index.html' && q !== undefined && options.api) {
      const api = options.api;
      const html = await renderSearchPage(new TextDecoder().decode(file.identity.body), { q, page: c.req.query('page') }, (apiPath) =>
        api(apiPath, c.env),
      );
      // Made for this query: not kept by a browser or a cache (the search is cheap, the queries many).
      const headers = { 'Content-Type': file.type, 'Cache-Control': 'no-store' };
      return c.req.method === 'HEAD' ? c.body(null, 200, headers) : c.body(html, 200, headers);
    }
    const accepted = c.req.header('accept-encoding');
    const variant = (acceptsEncoding(accepted, 'br') && file.br) || (acceptsEncoding(accepted, 'gzip') && file.gzip) || file.identity;
    const headers: Record<string, string> = { 'Cache-Control': file.cacheControl, ETag: variant.etag };
    if (file.gzip) headers.Vary = 'Accept-Encoding';
    if (ifNoneMatchMatches(c.req.header('if-none-match'), variant.etag)) return c.body(null, 304, headers);
    headers['Content-Type'] = file.type;
    if (variant === file.br) headers['Content-Encoding'] = 'br';
    if (variant === file.gzip) headers['Content-Encoding'] = 'gzip';
    if (c.req.method === 'HEAD') return c.body(null, 200, headers);
    return c.body(variant.body, 200, headers);
  };
}

async function readSite(root: string, turnstileSiteKey: string | undefined): Promise<Map<string, SiteFile>> {
  const files = new Map<string, SiteFile>();
  const entries = await readdir(root, { recursive: true, withFileTypes: true });
  await Promise.all(
    entries
      .filter((entry) => entry.isFile())
      .map(async (entry) => {
        const full = join(entry.parentPath, entry.name);
        const path = `/${relative(root, full).split(sep).join('/')}`;
        let body = new Uint8Array(await readFile(full));
        if (path === '/config.js' && turnstileSiteKey) {
          // The key is letters, digits, `_` and `-` (config checks it), so it is safe in a JS string.
          const filled = new TextDecoder()
            .decode(body)
            .replace(SITE_KEY_LINE, `window.NEWSLETTER_TURNSTILE_SITE_KEY = ${JSON.stringify(turnstileSiteKey)};`);
          body = new TextEncoder().encode(filled) as Uint8Array<ArrayBuffer>;
        }
        const extension = extname(path);
        const file: SiteFile = {
          type: CONTENT_TYPES[extension] ?? 'application/octet-stream',
          cacheControl: extension === '.html' || path === '/config.js' ? REVALIDATE : KEEP_A_WHILE,
          identity: { body, etag: etagOf(body, '') },
        };
        if (COMPRESSIBLE.has(extension)) {
          const [gzipped, brotli] = await Promise.all([
            promisify(gzip)(body, { level: 9 }),
            promisify(brotliCompress)(body, { params: { [zlibConstants.BROTLI_PARAM_QUALITY]: 11 } }),
          ]);
          // Each form has its own ETag: a cache must not answer one encoding's 304 for another.
          file.gzip = { body: new Uint8Array(gzipped), etag: etagOf(body, '-gzip') };
          file.br = { body: new Uint8Array(brotli), etag: etagOf(body, '-br') };
        }
        files.set(path, file);
      }),
  );
  return files;
}

function etagOf(body: Uint8Array, suffix: string): string {
  return `"${createHash('sha256').update(body).digest('base64url').slice(0, 24)}${suffix}"`;
}

/** Whether `Accept-Encoding` names this coding (or `*`) with a q-value above 0. */
function acceptsEncoding(header: string | undefined, coding: string): boolean {
  if (!header) return false;
  return header.split(',').some((part) => {
    const [name = '', ...params] = part.trim().toLowerCase().split(';');
    if (name.trim() !== coding && name.trim() !== '*') return false;
    const q = params.map((param) => param.trim()).find((param) => param.startsWith('q='));
    return q === undefined || Number(q.slice(2)) > 0;
  });
}
