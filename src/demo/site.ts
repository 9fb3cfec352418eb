import type { MiddlewareHandler } from 'hono';
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { extname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { brotliCompress, constants as zlibConstants, gzip } from 'node:zlib';
import { ifNoneMatchMatches } from '../core/http/read-reply.js';
import { cacheControlOf, NO_STORE, SITE_POLICIES } from '../core/reads/cache-policies.js';
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
const brotli = promisify(brotliCompress);
const gzipped = promisify(gzip);
const BROTLI_BEST = { params: { [zlibConstants.BROTLI_PARAM_QUALITY]: 11 } };
/** Pages and config.js are checked again on every visit; the other files are kept a while (reads/cache-policies.ts). */
const PAGE_CACHE_CONTROL = cacheControlOf(SITE_POLICIES.sitePage);
const FILE_CACHE_CONTROL = cacheControlOf(SITE_POLICIES.siteFile);

type Variant = { body: Uint8Array<ArrayBuffer>; etag: string; coding?: 'br' | 'gzip' };
/** `variants`: Brotli and gzip first for text; the file as it is last. */
type SiteFile = { type: string; cacheControl: string; variants: Variant[] };

/**
 * The example site (examples/site beside dist/) for demo mode, read once into memory, so no
 * request reaches the file system. With TURNSTILE_SITE_KEY set, config.js is served with the key
 * filled in (the file on disk stays the template a site owner copies). The archive page with `?q=`
 * comes with the matches in it (search-page.ts), so search works without JavaScript.
 */
export function createDemoSite(
  turnstileSiteKey: string | undefined,
  // The service's own routes, in process (the app's `request`, with the visitor's bindings), for search results without JavaScript.
  options: { api?: (path: string, env: unknown) => Promise<Response> } = {},
): MiddlewareHandler {
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
      const html = await renderSearchPage(
        new TextDecoder().decode(file.variants.at(-1)!.body),
        { q, page: c.req.query('page') },
        (apiPath) => api(apiPath, c.env),
      );
      // Made for this query: not kept by a browser or a cache (the search is cheap, the queries many).
      const headers = { 'Content-Type': file.type, 'Cache-Control': NO_STORE };
      return c.req.method === 'HEAD' ? c.body(null, 200, headers) : c.body(html, 200, headers);
    }
    const accepted = c.req.header('accept-encoding');
    const variant = file.variants.find((one) => !one.coding || acceptsEncoding(accepted, one.coding))!;
    const headers: Record<string, string> = { 'Cache-Control': file.cacheControl, ETag: variant.etag };
    if (file.variants.length > 1) headers.Vary = 'Accept-Encoding';
    if (ifNoneMatchMatches(c.req.header('if-none-match'), variant.etag)) return c.body(null, 304, headers);
    headers['Content-Type'] = file.type;
    if (variant.coding) headers['Content-Encoding'] = variant.coding;
    return c.req.method === 'HEAD' ? c.body(null, 200, headers) : c.body(variant.body, 200, headers);
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
        // Each form has its own ETag: a cache must not answer one encoding's 304 for another.
        const variant = (coding: 'br' | 'gzip', bytes: Buffer): Variant => ({
          coding,
          body: new Uint8Array(bytes),
          etag: etagOf(body, `-${coding}`),
        });
        const variants = COMPRESSIBLE.has(extension)
          ? [variant('br', await brotli(body, BROTLI_BEST)), variant('gzip', await gzipped(body, { level: 9 }))]
          : [];
        files.set(path, {
          type: CONTENT_TYPES[extension] ?? 'application/octet-stream',
          cacheControl: extension === '.html' || path === '/config.js' ? PAGE_CACHE_CONTROL : FILE_CACHE_CONTROL,
          variants: [...variants, { body, etag: etagOf(body, '') }],
        });
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
