import { readFile } from 'node:fs/promises';
import { parseDocument } from 'htmlparser2';
import { selectAll, selectOne } from 'css-select';
import type { Document, Element } from 'domhandler';
import { parseConfig } from '../../src/core/config/config.js';
import { silentLogger } from '../../src/core/log.js';
import { createAppForConfig } from '../../src/core/app.js';
import { buildSite, type SiteOptions } from '../../src/tools/site/build.js';
import { readPublication } from '../../src/tools/site/read.js';

export const SITE_URL = 'https://news.example.com/letters/';
export const API_URL = 'https://bff.example.com';

export async function siteAssets(): Promise<SiteOptions['assets']> {
  const dir = new URL('../../examples/', import.meta.url);
  const [styleCss, subscribeJs, faviconSvg, subscribeFormSnippet] = await Promise.all(
    ['site/style.css', 'site/subscribe.js', 'site/favicon.svg', 'subscribe-form.html'].map((name) => readFile(new URL(name, dir), 'utf8')),
  );
  return { styleCss: styleCss!, subscribeJs: subscribeJs!, faviconSvg: faviconSvg!, subscribeFormSnippet: subscribeFormSnippet! };
}

export function siteOptions(assets: SiteOptions['assets']): SiteOptions {
  return { siteUrl: SITE_URL, apiUrl: API_URL, searchApiUrl: API_URL, title: 'The Field Notes', description: 'A weekly letter.', assets };
}

/**
 * The service in demo mode, in process: the generator's typed client reads it through
 * `app.request`, so a whole build runs with no socket.
 */
export function createDemoService() {
  // Every setting at its default: a build reads every issue at once from one reader.
  const parsed = parseConfig({});
  if (!parsed.ok || parsed.config.mode !== 'demo') throw new Error('expected the demo configuration');
  const { app } = createAppForConfig(parsed.config, { log: silentLogger, clientIp: () => undefined });
  let requests = 0;
  const fetch = async (input: RequestInfo | URL, init?: RequestInit) => {
    requests++;
    return app.request(input, init);
  };
  return { fetch: fetch as typeof globalThis.fetch, requests: () => requests };
}

/**
 * The service with every setting at its default but `env` (nothing raised for the build): the
 * demo, or the upstream `fetch` answers. On a fake clock that `sleep` advances, so a build that
 * waits out a `Retry-After` does so at once; every status it answered is kept.
 */
export function createDefaultService(env: Record<string, string> = {}, upstreamFetch?: typeof globalThis.fetch) {
  const parsed = parseConfig(env);
  if (!parsed.ok) throw new Error(parsed.problems.join('; '));
  let time = 1_700_000_000_000;
  const now = () => time;
  const { app } = createAppForConfig(parsed.config, { log: silentLogger, clientIp: () => '203.0.113.9', now, fetch: upstreamFetch });
  const statuses: number[] = [];
  const fetch = async (input: RequestInfo | URL, init?: RequestInit) => {
    const response = await app.request(input, init);
    statuses.push(response.status);
    return response;
  };
  const waits: number[] = [];
  const sleep = async (ms: number) => {
    waits.push(ms);
    time += ms;
  };
  return { fetch: fetch as typeof globalThis.fetch, now, sleep, waits, statuses };
}

/** Reads the demo through the four routes and builds the site, as `npm run site:build` does. */
export async function buildDemoSite(assets: SiteOptions['assets']) {
  const demo = createDemoService();
  const publication = await readPublication({ apiUrl: API_URL, fetch: demo.fetch });
  return { files: buildSite(publication, siteOptions(assets)), publication, requests: demo.requests() };
}

export function parseHtml(html: string): Document {
  return parseDocument(html);
}

export function attr(document: Document, selector: string, name: string): string | undefined {
  return (selectOne(selector, document) as Element | null)?.attribs[name];
}

export function all(document: Document | Element, selector: string): Element[] {
  return selectAll(selector, document);
}

/** The output file a site-internal URL (absolute, or a path under the site's folder) is served from, or undefined for other hosts. */
export function fileForHref(href: string): string | undefined {
  const url = new URL(href, SITE_URL);
  const root = new URL(SITE_URL);
  if (url.origin !== root.origin) return undefined;
  if (!url.pathname.startsWith(root.pathname)) return `(outside the site folder) ${url.pathname}`;
  const path = decodeURIComponent(url.pathname.slice(root.pathname.length));
  return path === '' || path.endsWith('/') ? `${path}index.html` : path;
}
