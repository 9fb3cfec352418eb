import { renderAtomFeed, issueUpdatedAt, latestUpdate, xmlElement } from '../../core/feeds/feeds.js';
import type { IssueDetail, PublicCategory } from '../../core/public-shapes.js';
import { toIssueNeighbour } from '../../core/reads/allow-list.js';
import {
  archivePath,
  createSitePaths,
  FEED_PATH,
  fileOf,
  isSafeSegment,
  issuePath,
  renderArchivePage,
  renderIssuePage,
  renderNotFoundPage,
  renderSearchPage,
  SEARCH_PATH,
  type SiteIdentity,
  subscribeFormFrom,
} from './pages.js';
import { SEARCH_JS } from './search-script.js';

/** Read through the four routes (read.ts); issues newest first. */
export type Publication = { issues: readonly IssueDetail[]; categories: readonly PublicCategory[] };

export interface SiteOptions {
  /** Absolute: canonical URLs, sitemap, feed. */
  siteUrl: string;
  /** The subscribe form posts to its /api/subscribe. */
  apiUrl: string;
  /** Asked from the reader's browser; none: the page filters its list of every issue instead. */
  searchApiUrl?: string | undefined;
  title: string;
  description: string;
  /** examples/site's files and examples/subscribe-form.html. */
  assets: { styleCss: string; subscribeJs: string; faviconSvg: string; subscribeFormSnippet: string };
}

// As archive.js pages.
const PAGE_SIZE = 10;
// As the service's feed route.
const FEED_ENTRIES = 20;
// Not the clock: same input, same bytes.
const EPOCH = '1970-01-01T00:00:00.000Z';

/** Appended to the example site's style.css. */
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

/** The whole static site as path → content, from data only: the same publication gives the same bytes. */
export function buildSite(publication: Publication, options: SiteOptions): Map<string, string> {
  const paths = createSitePaths(options.siteUrl);
  const { title, description, assets } = options;
  const subscribeForm = subscribeFormFrom(assets.subscribeFormSnippet, options.apiUrl, title);
  const site: SiteIdentity = { title, description, subscribeForm, paths };
  const issues = publication.issues.filter((issue) => isSafeSegment(issue.slug));
  const categories = withIssueCategories(publication.categories, issues).filter((category) => isSafeSegment(category.slug));
  const files = new Map<string, string>();
  const sitemap: { loc: string; lastmod: string | null }[] = [];
  const page = (path: string, html: string, lastmod: string | null) => {
    files.set(fileOf(path), html);
    sitemap.push({ loc: paths.absolute(path), lastmod });
  };

  const listings = [
    { category: undefined, issues },
    ...categories.map((category) => ({ category, issues: issues.filter((issue) => issue.category?.slug === category.slug) })),
  ];
  for (const { category, issues: listed } of listings) {
    const pages = Math.max(1, Math.ceil(listed.length / PAGE_SIZE));
    // Its latest change dates every page of a listing.
    const lastmod = latestUpdate(listed, EPOCH);
    for (let at = 1; at <= pages; at++) {
      const view = { issues: listed.slice((at - 1) * PAGE_SIZE, at * PAGE_SIZE), page: at, pages, total: listed.length, categories };
      page(archivePath(at, category?.slug), renderArchivePage(site, category ? { ...view, category } : view), lastmod);
    }
  }
  // Neighbours from the pages this build writes, so each link has its page.
  const neighbour = (next: IssueDetail | undefined) => (next ? toIssueNeighbour(next) : null);
  issues.forEach((issue, at) => {
    const neighbours = { newer: neighbour(issues[at - 1]), older: neighbour(issues[at + 1]) };
    page(issuePath(issue.slug), renderIssuePage(site, issue, neighbours), issueUpdatedAt(issue));
  });

  files.set(fileOf(SEARCH_PATH), renderSearchPage(site, issues, options.searchApiUrl));
  files.set('search.js', SEARCH_JS);
  const issueUrl = (slug: string) => paths.absolute(issuePath(slug));
  const feed = {
    issueUrl,
    feedUrl: paths.absolute(FEED_PATH),
    siteUrl: paths.absolute(''),
    title,
    description,
    updated: latestUpdate(issues, EPOCH),
  };
  files.set(FEED_PATH, renderAtomFeed(issues.slice(0, FEED_ENTRIES), feed));
  const urls = sitemap.map(({ loc, lastmod }) => {
    const modified = lastmod ? `    ${xmlElement('lastmod', lastmod.slice(0, 10))}\n` : '';
    return `  <url>\n    ${xmlElement('loc', loc)}\n${modified}  </url>\n`;
  });
  const urlset = '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">';
  files.set('sitemap.xml', `<?xml version="1.0" encoding="utf-8"?>\n${urlset}\n${urls.join('')}</urlset>\n`);
  // Every crawler may read everything; the sitemap says where the pages are.
  files.set('robots.txt', `User-agent: *\nAllow: /\n\nSitemap: ${paths.absolute('sitemap.xml')}\n`);
  files.set('404.html', renderNotFoundPage(site));
  files.set('style.css', assets.styleCss + LETTER_CSS);
  files.set('favicon.svg', assets.faviconSvg);
  files.set('subscribe.js', assets.subscribeJs);
  return files;
}

/** The route's categories, plus any an issue names that it lacks (by name), so no category link leads nowhere. */
function withIssueCategories(listed: readonly PublicCategory[], issues: readonly IssueDetail[]): PublicCategory[] {
  const added = new Map<string, PublicCategory>();
  for (const { category } of issues) {
    if (category && !listed.some((known) => known.slug === category.slug) && !added.has(category.slug)) added.set(category.slug, category);
  }
  return [...listed, ...[...added.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))];
}
