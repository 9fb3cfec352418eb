import { SLUG_PATTERN } from '../../core/slug.js';

/**
 * A page path is relative to the site's root: a folder ending in `/`, or a file. Links use the
 * site URL's own path, so a site built for https://example.com/letters/ works from that folder.
 */
export interface SitePaths {
  absolute(path: string): string;
  /** From the site's root folder (`/letters/issues/x/`). */
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

export const SEARCH_PATH = 'search/';

export function fileOf(path: string): string {
  return path === '' || path.endsWith('/') ? `${path}index.html` : path;
}

/** A slug becomes a folder name: the slug rule, checked here for categories too. */
export function isSafeSegment(slug: string): boolean {
  return SLUG_PATTERN.test(slug);
}

/** `siteUrl` must be absolute http(s); a missing trailing slash is added. */
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
