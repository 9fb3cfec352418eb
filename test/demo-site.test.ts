import { readFileSync } from 'node:fs';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { createDemoSite } from '../src/demo/site.js';
import { createTestApp } from './helpers.js';

const CONFIG_ON_DISK = readFileSync(new URL('../examples/site/config.js', import.meta.url), 'utf8');

function siteWith(turnstileSiteKey: string | undefined) {
  const site = createDemoSite(turnstileSiteKey);
  return new Hono().get('*', (c, next) => site(c, next));
}

describe('the demo site', () => {
  it('serves config.js as it is on disk when no Turnstile site key is set', async () => {
    const response = await siteWith(undefined).request('/config.js');
    expect(await response.text()).toBe(CONFIG_ON_DISK);
  });

  it('fills TURNSTILE_SITE_KEY into config.js, so the form shows the widget', async () => {
    const response = await siteWith('0x4AAAAAAA-fake-site').request('/config.js');
    expect(response.headers.get('content-type')).toMatch(/^text\/javascript/);
    const body = await response.text();
    expect(body).toContain(`window.NEWSLETTER_TURNSTILE_SITE_KEY = "0x4AAAAAAA-fake-site";`);
    expect(body).toContain("window.NEWSLETTER_BFF_URL = '';");
  });

  it('serves the other files unchanged', async () => {
    const response = await siteWith('0x4AAAAAAA-fake-site').request('/subscribe.js');
    expect(response.status).toBe(200);
    expect(await response.text()).toContain('cf-turnstile');
  });

  it('lets the page load Turnstile’s script and frame only when a site key is set', async () => {
    const cspOf = async (env: Record<string, string>) => {
      const { app } = createTestApp({ env, site: createDemoSite(env.TURNSTILE_SITE_KEY) });
      return (await app.request('/index.html')).headers.get('content-security-policy') ?? '';
    };
    const withKey = await cspOf({ TURNSTILE_SITE_KEY: '0x4AAAAAAA-fake-site' });
    expect(withKey).toContain("script-src 'self' https://challenges.cloudflare.com;");
    expect(withKey).toContain("frame-src 'self' https://challenges.cloudflare.com;");
    expect(await cspOf({})).not.toContain('challenges.cloudflare.com');
  });

  it('serves an icon at /favicon.ico and the one the pages link', async () => {
    const { app } = createTestApp({ site: createDemoSite(undefined) });
    const ico = await app.request('/favicon.ico');
    expect(ico.status).toBe(200);
    expect(ico.headers.get('content-type')).toBe('image/x-icon');
    expect(new Uint8Array(await ico.arrayBuffer())).toEqual(
      new Uint8Array(readFileSync(new URL('../examples/site/favicon.ico', import.meta.url))),
    );
    const svg = await app.request('/favicon.svg');
    expect(svg.headers.get('content-type')).toBe('image/svg+xml');
    for (const page of ['index.html', 'issue.html']) {
      expect(readFileSync(new URL(`../examples/site/${page}`, import.meta.url), 'utf8')).toContain(
        '<link rel="icon" href="favicon.svg" type="image/svg+xml">',
      );
    }
  });

  it('sends Cache-Control and a strong ETag with every file, and answers a matching If-None-Match with 304', async () => {
    const { app } = createTestApp({ site: createDemoSite(undefined) });
    const page = await app.request('/');
    expect(page.status).toBe(200);
    expect(page.headers.get('cache-control')).toBe('no-cache');
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const etag = page.headers.get('etag')!;
    expect(etag).toMatch(/^"[\w-]{24}"$/);
    expect((await app.request('/index.html')).headers.get('etag')).toBe(etag);
    const again = await app.request('/', { headers: { 'If-None-Match': `W/${etag}` } });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe('');
    expect(again.headers.get('etag')).toBe(etag);
    expect(again.headers.get('cache-control')).toBe('no-cache');
    const style = await app.request('/style.css');
    expect(style.headers.get('cache-control')).toBe('public, max-age=300');
    expect(style.headers.get('etag')).not.toBe(etag);
    expect((await app.request('/style.css', { headers: { 'If-None-Match': '"other"' } })).status).toBe(200);
    expect((await app.request('/config.js')).headers.get('cache-control')).toBe('no-cache');
  });

  it('compresses text as the browser asks, each form with its own ETag, and leaves the rest alone', async () => {
    const { app } = createTestApp({ site: createDemoSite(undefined) });
    const onDisk = readFileSync(new URL('../examples/site/archive.js', import.meta.url));
    const plain = await app.request('/archive.js');
    expect(plain.headers.get('content-encoding')).toBeNull();
    expect(plain.headers.get('vary')).toBe('Accept-Encoding');
    const gzipped = await app.request('/archive.js', { headers: { 'Accept-Encoding': 'gzip, deflate' } });
    expect(gzipped.headers.get('content-encoding')).toBe('gzip');
    const gzipBytes = Buffer.from(await gzipped.arrayBuffer());
    expect(gzipBytes.length).toBeLessThan(onDisk.length / 2);
    expect(gunzipSync(gzipBytes)).toEqual(onDisk);
    const brotli = await app.request('/archive.js', { headers: { 'Accept-Encoding': 'gzip, deflate, br, zstd' } });
    expect(brotli.headers.get('content-encoding')).toBe('br');
    expect(brotliDecompressSync(Buffer.from(await brotli.arrayBuffer()))).toEqual(onDisk);
    expect(new Set([plain, gzipped, brotli].map((res) => res.headers.get('etag'))).size).toBe(3);
    expect((await app.request('/archive.js', { headers: { 'Accept-Encoding': 'br;q=0, gzip' } })).headers.get('content-encoding')).toBe(
      'gzip',
    );
    const icon = await app.request('/favicon.ico', { headers: { 'Accept-Encoding': 'gzip, br' } });
    expect(icon.headers.get('content-encoding')).toBeNull();
    expect(icon.headers.get('vary')).toBeNull();
  });

  it('answers a path it has no file for with the API’s JSON 404, and reads nothing outside the site', async () => {
    const { app } = createTestApp({ site: createDemoSite(undefined) });
    for (const path of ['/nope.html', '/../package.json', '/%2e%2e/package.json', '/thumbnails']) {
      const res = await app.request(path);
      expect(res.status, path).toBe(404);
      expect(res.headers.get('content-type'), path).toMatch(/^application\/json/);
    }
  });
});

describe('the demo site’s archive page with ?q= (search without JavaScript)', () => {
  /** The app with the demo site, whose search pages read the app's own routes. */
  function searchingSite() {
    let app: ReturnType<typeof createTestApp>['app'] | undefined;
    const site = createDemoSite(undefined, { api: async (path) => app!.request(path) });
    const test = createTestApp({ site });
    app = test.app;
    return test;
  }

  it('comes with the matches in it: cards, a count, the query in the box, and no "needs JavaScript"', async () => {
    const { app } = searchingSite();
    const response = await app.request('/?q=rooftop+beekeepers');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    expect(response.headers.get('cache-control')).toBe('no-store');
    const html = await response.text();
    const api = (await (await app.request('/api/issues?q=rooftop+beekeepers&limit=10')).json()) as {
      data: { slug: string }[];
      meta: { total: number };
    };
    expect(api.meta.total).toBeGreaterThan(0);
    for (const issue of api.data) expect(html).toContain(`href="issue.html?slug=${issue.slug}"`);
    expect(html).toContain('<title>The Field Notes · Search: rooftop beekeepers</title>');
    expect(html).toContain('<body data-rendered="search">');
    expect(html).toContain('value="rooftop beekeepers"');
    expect(html).toContain(
      `${api.meta.total} ${api.meta.total === 1 ? 'issue matches' : 'issues match'} “rooftop beekeepers” · page 1 of 1`,
    );
    expect(html).toMatch(/\d+ min read/);
    expect(html).not.toContain('The archive needs JavaScript');
    expect(html).not.toContain('<ol class="issue-list" id="issue-list" hidden>');
  });

  it('pages through the matches, keeping the query in the pager links', async () => {
    const { app } = searchingSite();
    const html = await (await app.request('/?q=the&page=2')).text();
    const total = ((await (await app.request('/api/issues?q=the')).json()) as { meta: { total: number } }).meta.total;
    expect(total).toBeGreaterThan(10);
    expect(html).toContain(`page 2 of ${Math.ceil(total / 10)}`);
    expect(html).toContain('href="?q=the" rel="prev"');
  });

  it('says so when nothing matches, and escapes the query wherever it is shown', async () => {
    const { app } = searchingSite();
    const html = await (await app.request(`/?q=${encodeURIComponent('<script>alert(1)</script> "x"')}`)).text();
    expect(html).toContain('No issues match “&#60;script&#62;alert(1)&#60;/script&#62; &#34;x&#34;”.');
    expect(html).not.toContain('<script>alert(1)');
    expect(html).toContain('<div class="state" id="archive-empty">');
  });

  it('cuts a search longer than the service takes to its first 200 characters, as archive.js does', async () => {
    const { app } = searchingSite();
    const html = await (await app.request(`/?q=${'a'.repeat(300)}`)).text();
    expect(html).toContain(`value="${'a'.repeat(200)}"`);
    expect(html).not.toContain('could not be searched');
  });

  it('leaves the archive page without ?q= as the file it is', async () => {
    const { app } = searchingSite();
    const response = await app.request('/');
    expect(response.headers.get('cache-control')).toBe('no-cache');
    expect(await response.text()).toBe(readFileSync(new URL('../examples/site/index.html', import.meta.url), 'utf8'));
  });
});
