import { createHash } from 'node:crypto';
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { parseConfig } from '../../core/config/config.js';
import { renderAtomFeed, issueUpdatedAt, latestUpdate, xmlElement } from '../../core/feeds/feeds.js';
import { createLogger } from '../../core/log.js';
import type { IssueDetail, PublicCategory } from '../../core/public-shapes.js';
import { createAppForConfig } from '../../core/app.js';
import * as pages from './pages.js';
import { neighbourOf, type Publication } from './read.js';
import { SEARCH_JS } from './search-script.js';

export interface SiteOptions {
  siteUrl: string;
  apiUrl: string;
  searchApiUrl?: string | undefined; // none: the search page filters its own list of every issue
  title: string;
  description: string;
  assets: { styleCss: string; subscribeJs: string; faviconSvg: string; subscribeFormSnippet: string };
}

// As archive.js pages and the service's feed route; the epoch, not the clock: same input, same bytes.
const PAGE_SIZE = 10;
const FEED_ENTRIES = 20;
const EPOCH = '1970-01-01T00:00:00.000Z';

const LETTER_CSS = `
/* Static site: the letter's own HTML, inline in the issue page. */
.letter { background: var(--card); border: 1px solid var(--line); border-radius: var(--radius); padding: 1.5rem; font: 1.0625rem/1.65 Georgia, "Iowan Old Style", serif; overflow-wrap: anywhere; }
.letter h1, .letter h2, .letter h3 { font-family: system-ui, sans-serif; line-height: 1.25; }
.letter img { max-width: 100%; height: auto; }
.letter blockquote { margin: 1.25rem 0; padding: .25rem 1rem; border-left: 4px solid #7aa36a; color: #3d4d3d; font-style: italic; }
.letter table { border-collapse: collapse; max-width: 100%; }
.letter > :first-child { margin-top: 0; }
.letter > :last-child { margin-bottom: 0; }
`;

export function buildSite(publication: Publication, options: SiteOptions): Map<string, string> {
  const paths = pages.createSitePaths(options.siteUrl);
  const { title, description, assets } = options;
  const site = { title, description, subscribeForm: pages.subscribeFormFrom(assets.subscribeFormSnippet, options.apiUrl, title), paths };
  const issues = publication.issues.filter((issue) => pages.isSafeSegment(issue.slug));
  const categories = withIssueCategories(publication.categories, issues).filter((category) => pages.isSafeSegment(category.slug));
  const files = new Map<string, string>();
  let sitemap = '';
  const page = (path: string, html: string, lastmod: string | null) => {
    files.set(pages.fileOf(path), html);
    const modified = lastmod ? `    ${xmlElement('lastmod', lastmod.slice(0, 10))}\n` : '';
    sitemap += `  <url>\n    ${xmlElement('loc', paths.absolute(path))}\n${modified}  </url>\n`;
  };

  for (const category of [undefined, ...categories]) {
    const listed = category ? issues.filter((issue) => issue.category?.slug === category.slug) : issues;
    const count = Math.max(1, Math.ceil(listed.length / PAGE_SIZE));
    const lastmod = latestUpdate(listed, EPOCH);
    for (let at = 1; at <= count; at++) {
      const view = { issues: listed.slice((at - 1) * PAGE_SIZE, at * PAGE_SIZE), page: at, pages: count, total: listed.length, categories };
      page(pages.archivePath(at, category?.slug), pages.renderArchivePage(site, category ? { ...view, category } : view), lastmod);
    }
  }
  // Neighbours from the pages this build writes, so each link has its page.
  issues.forEach((issue, at) => {
    const neighbours = { newer: neighbourOf(issues[at - 1]), older: neighbourOf(issues[at + 1]) };
    page(pages.issuePath(issue.slug), pages.renderIssuePage(site, issue, neighbours), issueUpdatedAt(issue));
  });

  files.set(pages.fileOf(pages.SEARCH_PATH), pages.renderSearchPage(site, issues, options.searchApiUrl));
  files.set('search.js', SEARCH_JS);
  const issueUrl = (slug: string) => paths.absolute(pages.issuePath(slug));
  const feed = { issueUrl, feedUrl: paths.absolute(pages.FEED_PATH), siteUrl: paths.absolute(''), title, description };
  files.set(pages.FEED_PATH, renderAtomFeed(issues.slice(0, FEED_ENTRIES), { ...feed, updated: latestUpdate(issues, EPOCH) }));
  const urlset = '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">';
  files.set('sitemap.xml', `<?xml version="1.0" encoding="utf-8"?>\n${urlset}\n${sitemap}</urlset>\n`);
  files.set('robots.txt', `User-agent: *\nAllow: /\n\nSitemap: ${paths.absolute('sitemap.xml')}\n`);
  files.set('404.html', pages.renderNotFoundPage(site));
  files.set('style.css', assets.styleCss + LETTER_CSS);
  files.set('favicon.svg', assets.faviconSvg);
  files.set('subscribe.js', assets.subscribeJs);
  return files;
}

/** The route's categories, plus any an issue names that it lacks (sorted by name), so no category link leads nowhere. */
function withIssueCategories(listed: readonly PublicCategory[], issues: readonly IssueDetail[]): PublicCategory[] {
  const added = new Map<string, PublicCategory>();
  for (const { category } of issues) if (category && !added.has(category.slug)) added.set(category.slug, category);
  for (const { slug } of listed) added.delete(slug);
  return [...listed, ...[...added.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))];
}

export function siteDigest(files: ReadonlyMap<string, string>): string {
  const hash = createHash('sha256');
  for (const path of [...files.keys()].sort()) hash.update(`${path}\0${Buffer.byteLength(files.get(path)!)}\0`).update(files.get(path)!);
  return hash.digest('hex');
}

/** `outDir` must be missing, empty or a previous build, emptied first so an unpublished issue leaves no page. */
export async function writeSite(outDir: string, files: ReadonlyMap<string, string>): Promise<void> {
  const existing = await readdir(outDir).catch((error: NodeJS.ErrnoException): string[] => {
    if (error.code === 'ENOENT') return [];
    throw error;
  });
  if (existing.length > 0) {
    if (!existing.includes('sitemap.xml') || !existing.includes('404.html'))
      throw new Error(`${outDir} is not empty and is not a previous site build; choose an empty folder`);
    await rm(outDir, { recursive: true });
  }
  for (const path of [...files.keys()].sort()) {
    await mkdir(dirname(join(outDir, path)), { recursive: true });
    await writeFile(join(outDir, path), files.get(path)!);
  }
}

export function createInProcessService(
  env: Record<string, string | undefined>,
  options: { fetch?: typeof globalThis.fetch; write: (line: string) => void },
): typeof globalThis.fetch {
  // No visitor here: the visitors' read budget must not pace the build (the upstream's 429 still does).
  const parsed = parseConfig({ READ_BUDGET_PER_MINUTE: '100000', ...env });
  if (!parsed.ok) throw new Error(`the environment does not configure the service: ${parsed.problems.join('; ')}`);
  const log = createLogger({ write: options.write, redact: [parsed.config.apiKey, parsed.config.turnstileSecretKey] });
  const { app } = createAppForConfig(parsed.config, { log, fetch: options.fetch, clientIp: () => undefined });
  return (async (input: RequestInfo | URL, init?: RequestInit) => app.request(input, init)) as typeof globalThis.fetch;
}
