/**
 * Where each page of the static site lives. A page path is relative to the site's root and
 * ends in `/` (a folder with index.html) or is a file name; links use the site URL's own path,
 * so a site built for https://example.com/letters/ works from that folder.
 */
export interface SitePaths {
  /** Absolute URL of a page path (canonical links, Open Graph, sitemap, feed). */
  absolute(path: string): string;
  /** The href of a page path, from the site's root folder (`/letters/issues/x/`). */
  href(path: string): string;
}

/** `''` is the archive's first page. */
export function archivePath(page: number, category?: string): string {
  const base = category === undefined ? '' : `categories/${category}/`;
  return page <= 1 ? base : `${base}page/${page}/`;
}

export function issuePath(slug: string): string {
  return `issues/${slug}/`;
}

/** The search page: the search box's GET form lands there. */
export const SEARCH_PATH = 'search/';

/** The file that serves a page path. */
export function fileOf(path: string): string {
  return path === '' || path.endsWith('/') ? `${path}index.html` : path;
}

// A slug becomes a folder name: only letters, digits, `-` and `_` (the service's slug rule
// for issues; category slugs are not validated by the service, so the site checks both).
const PATH_SEGMENT = /^[A-Za-z0-9](?:[A-Za-z0-9_-]{0,198}[A-Za-z0-9])?$/;

export function isSafeSegment(slug: string): boolean {
  return PATH_SEGMENT.test(slug);
}

/** `siteUrl` must be absolute http(s); a missing trailing slash is added (the site is a folder). */
export function createSitePaths(siteUrl: string): SitePaths {
  const root = new URL(siteUrl);
  if (root.protocol !== 'https:' && root.protocol !== 'http:') throw new Error('the site URL must be http(s)');
  root.search = '';
  root.hash = '';
  if (!root.pathname.endsWith('/')) root.pathname += '/';
  return {
    absolute: (path) => root.href + path,
    href: (path) => root.pathname + path,
  };
}
