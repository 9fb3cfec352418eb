import { renderAtomFeed } from '../../core/feeds/atom.js';
import { issueUpdatedAt, latestUpdate } from '../../core/feeds/options.js';
import type { IssueDetail, PublicCategory } from '../../core/public-shapes.js';
import { toIssueNeighbour } from '../../core/reads/allow-list.js';
import { FEED_PATH, subscribeFormFrom, type SiteIdentity } from './layout.js';
import { LETTER_CSS } from './letter-style.js';
import { renderArchivePage, renderIssuePage, renderNotFoundPage, renderSearchPage } from './pages.js';
import { archivePath, createSitePaths, fileOf, isSafeSegment, issuePath, SEARCH_PATH } from './paths.js';
import { SEARCH_JS } from './search-script.js';
import { renderRobots, renderSitemap, type SitemapEntry } from './sitemap.js';

/** Read through the four routes (read.ts). */
export interface Publication {
  /** Newest first. */
  issues: readonly IssueDetail[];
  categories: readonly PublicCategory[];
}

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
  pageSize?: number;
}

// As archive.js pages.
const DEFAULT_PAGE_SIZE = 10;
// As the service's feed route.
const FEED_ENTRIES = 20;
// Not the clock: same input, same bytes.
const EPOCH = '1970-01-01T00:00:00.000Z';

/** The whole static site as path → content, from data only: the same publication gives the same bytes. */
export function buildSite(publication: Publication, options: SiteOptions): Map<string, string> {
  const paths = createSitePaths(options.siteUrl);
  const site: SiteIdentity = {
    title: options.title,
    description: options.description,
    subscribeForm: subscribeFormFrom(options.assets.subscribeFormSnippet, options.apiUrl, options.title),
    paths,
  };
  const pageSize = options.pageSize ?? DEFAULT_PAGE_SIZE;
  const issues = publication.issues.filter((issue) => isSafeSegment(issue.slug));
  const categories = withIssueCategories(publication.categories, issues).filter((category) => isSafeSegment(category.slug));
  const files = new Map<string, string>();
  const sitemap: SitemapEntry[] = [];

  const listings = [
    { category: undefined, issues },
    ...categories.map((category) => ({ category, issues: issues.filter((issue) => issue.category?.slug === category.slug) })),
  ];
  for (const listing of listings) {
    const pages = Math.max(1, Math.ceil(listing.issues.length / pageSize));
    // Its latest change dates every page of a listing.
    const lastmod = latestUpdate(listing.issues, EPOCH);
    for (let page = 1; page <= pages; page++) {
      const path = archivePath(page, listing.category?.slug);
      const view = {
        issues: listing.issues.slice((page - 1) * pageSize, page * pageSize),
        page,
        pages,
        total: listing.issues.length,
        categories,
        ...(listing.category ? { category: listing.category } : {}),
      };
      files.set(fileOf(path), renderArchivePage(site, view));
      sitemap.push({ loc: paths.absolute(path), lastmod });
    }
  }

  // Neighbours from the pages this build writes, so each link has its page.
  issues.forEach((issue, at) => {
    const path = issuePath(issue.slug);
    const newer = issues[at - 1];
    const older = issues[at + 1];
    files.set(
      fileOf(path),
      renderIssuePage(site, issue, { newer: newer ? toIssueNeighbour(newer) : null, older: older ? toIssueNeighbour(older) : null }),
    );
    sitemap.push({ loc: paths.absolute(path), lastmod: issueUpdatedAt(issue) });
  });
  files.set(fileOf(SEARCH_PATH), renderSearchPage(site, issues, options.searchApiUrl));
  files.set('search.js', SEARCH_JS);

  files.set(
    FEED_PATH,
    renderAtomFeed(issues.slice(0, FEED_ENTRIES), {
      issueUrl: (slug) => paths.absolute(issuePath(slug)),
      feedUrl: paths.absolute(FEED_PATH),
      siteUrl: paths.absolute(''),
      title: options.title,
      description: options.description,
      updated: latestUpdate(issues, EPOCH),
    }),
  );
  files.set('sitemap.xml', renderSitemap(sitemap));
  files.set('robots.txt', renderRobots(paths.absolute('sitemap.xml')));
  files.set('404.html', renderNotFoundPage(site));
  files.set('style.css', options.assets.styleCss + LETTER_CSS);
  files.set('favicon.svg', options.assets.faviconSvg);
  files.set('subscribe.js', options.assets.subscribeJs);
  return files;
}

/** The route's categories, plus any an issue names that it lacks (by name), so no category link leads nowhere. */
function withIssueCategories(listed: readonly PublicCategory[], issues: readonly IssueDetail[]): PublicCategory[] {
  const bySlug = new Map(listed.map((category) => [category.slug, category]));
  const added = new Map<string, PublicCategory>();
  for (const { category } of issues) {
    if (category && !bySlug.has(category.slug) && !added.has(category.slug)) added.set(category.slug, category);
  }
  return [...listed, ...[...added.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))];
}
