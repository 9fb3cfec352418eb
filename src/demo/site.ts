import type { MiddlewareHandler } from 'hono';
import { readdir, readFile } from 'node:fs/promises';
import { extname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chooseCopy, ifNoneMatchMatches } from '../core/http/read-reply.js';
import { cacheControlOf, NO_STORE, SITE_POLICIES } from '../core/reads/cache-policies.js';
import { type EncodedCopy, strongEtag } from '../core/reads/rendered-json.js';
import { createNodeBodyEncoder } from '../node/compression.js';
import { renderSearchPage } from './search-page.js';

const SITE_KEY_LINE = "window.NEWSLETTER_TURNSTILE_SITE_KEY = '';";

// `true`: text worth compressing (images other than SVG already are).
const TYPES: Readonly<Record<string, [type: string, text: boolean]>> = {
  '.html': ['text/html; charset=utf-8', true],
  '.css': ['text/css; charset=utf-8', true],
  '.js': ['text/javascript; charset=utf-8', true],
  '.svg': ['image/svg+xml', true],
  '.ico': ['image/x-icon', false],
  '.png': ['image/png', false],
  '.txt': ['text/plain; charset=utf-8', true],
};

type SiteFile = { type: string; cacheControl: string; body: Uint8Array<ArrayBuffer>; etag: string; copies: EncodedCopy[] };

/**
 * Demo mode's example site (examples/site), read once into memory; config.js gets TURNSTILE_SITE_KEY filled in.
 * `api`: the service's own routes in process, so the archive page with `?q=` comes with its matches (search-page.ts).
 */
export function createDemoSite(
  turnstileSiteKey: string | undefined,
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
    const { api } = options;
    if (path === '/index.html' && q !== undefined && api) {
      const view = { q, page: c.req.query('page') };
      const html = await renderSearchPage(new TextDecoder().decode(file.body), view, (apiPath) => api(apiPath, c.env));
      // Made for this query: not kept by a browser or a cache (the search is cheap, the queries many).
      const headers = { 'Content-Type': file.type, 'Cache-Control': NO_STORE };
      return c.req.method === 'HEAD' ? c.body(null, 200, headers) : c.body(html, 200, headers);
    }
    // Each form has its own ETag: a cache must not answer one encoding's 304 for another.
    const copy = chooseCopy(c.req.header('accept-encoding'), file.copies);
    const headers: Record<string, string> = { 'Cache-Control': file.cacheControl, ETag: (copy ?? file).etag };
    if (file.copies.length > 0) headers.Vary = 'Accept-Encoding';
    if (ifNoneMatchMatches(c.req.header('if-none-match'), headers.ETag!)) return c.body(null, 304, headers);
    headers['Content-Type'] = file.type;
    if (copy) headers['Content-Encoding'] = copy.coding;
    return c.req.method === 'HEAD' ? c.body(null, 200, headers) : c.body((copy ?? file).body, 200, headers);
  };
}

async function readSite(root: string, turnstileSiteKey: string | undefined): Promise<Map<string, SiteFile>> {
  const encode = createNodeBodyEncoder({ minBytes: 0 });
  const entries = (await readdir(root, { recursive: true, withFileTypes: true })).filter((entry) => entry.isFile());
  const read = entries.map(async (entry): Promise<[string, SiteFile]> => {
    const full = join(entry.parentPath, entry.name);
    const path = `/${relative(root, full).split(sep).join('/')}`;
    let body = new Uint8Array(await readFile(full));
    if (path === '/config.js' && turnstileSiteKey) {
      // The key is letters, digits, `_` and `-` (config checks it), so it is safe in a JS string.
      const filled = new TextDecoder()
        .decode(body)
        .replace(SITE_KEY_LINE, `window.NEWSLETTER_TURNSTILE_SITE_KEY = ${JSON.stringify(turnstileSiteKey)};`);
      body = new TextEncoder().encode(filled);
    }
    const [type = 'application/octet-stream', text = false] = TYPES[extname(path)] ?? [];
    const etag = await strongEtag(body);
    const copies = text
      ? (await encode(new TextDecoder().decode(body))).map((one) => ({ ...one, etag: `${etag.slice(0, -1)}-${one.coding}"` }))
      : [];
    const policy = path.endsWith('.html') || path === '/config.js' ? SITE_POLICIES.sitePage : SITE_POLICIES.siteFile;
    return [path, { type, cacheControl: cacheControlOf(policy), body, etag, copies }];
  });
  return new Map(await Promise.all(read));
}
