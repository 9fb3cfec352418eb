import { xmlElement } from '../../core/feeds/xml.js';

export interface SitemapEntry {
  loc: string;
  /** ISO 8601; the date part is written (W3C Datetime). */
  lastmod: string | null;
}

export function renderSitemap(entries: readonly SitemapEntry[]): string {
  const urls = entries.map((entry) =>
    [
      '  <url>',
      `    ${xmlElement('loc', entry.loc)}`,
      ...(entry.lastmod ? [`    ${xmlElement('lastmod', entry.lastmod.slice(0, 10))}`] : []),
      '  </url>',
    ].join('\n'),
  );
  return [
    '<?xml version="1.0" encoding="utf-8"?>',
    '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">',
    ...urls,
    '</urlset>',
    '',
  ].join('\n');
}

/** Every crawler may read everything; the sitemap says where the pages are. */
export function renderRobots(sitemapUrl: string): string {
  return `User-agent: *\nAllow: /\n\nSitemap: ${sitemapUrl}\n`;
}
