import type { IssueDetail } from '../../core/public-shapes.js';
import { escapeHtml, inlineJson } from './html.js';
import type { SiteIdentity } from './layout.js';

export interface HeadTags {
  title: string;
  /** On a shared card the site's name shows anyway (defaults to `title`). */
  socialTitle?: string;
  description: string;
  canonical?: string;
  image?: string | null;
  /** Already HTML. */
  extra?: string[];
}

export function renderHead(site: SiteIdentity, tags: HeadTags, ogType: 'website' | 'article'): string {
  const meta = (attribute: 'name' | 'property', key: string, value: string) =>
    `<meta ${attribute}="${key}" content="${escapeHtml(value)}">`;
  const social = tags.socialTitle ?? tags.title;
  const lines = [
    `<title>${escapeHtml(tags.title)}</title>`,
    meta('name', 'description', tags.description),
    ...(tags.canonical ? [`<link rel="canonical" href="${escapeHtml(tags.canonical)}">`] : []),
    meta('property', 'og:site_name', site.title),
    meta('property', 'og:type', ogType),
    meta('property', 'og:title', social),
    meta('property', 'og:description', tags.description),
    ...(tags.canonical ? [meta('property', 'og:url', tags.canonical)] : []),
    ...(tags.image ? [meta('property', 'og:image', tags.image)] : []),
    meta('name', 'twitter:card', tags.image ? 'summary_large_image' : 'summary'),
    meta('name', 'twitter:title', social),
    meta('name', 'twitter:description', tags.description),
    ...(tags.image ? [meta('name', 'twitter:image', tags.image)] : []),
    ...(tags.extra ?? []),
  ];
  return lines.join('\n');
}

/** Publication time, section and a schema.org Article. */
export function articleExtras(site: SiteIdentity, issue: IssueDetail, url: string, description: string): string[] {
  const extras: string[] = [];
  if (issue.sentAt) extras.push(`<meta property="article:published_time" content="${escapeHtml(issue.sentAt)}">`);
  if (issue.category) extras.push(`<meta property="article:section" content="${escapeHtml(issue.category.name)}">`);
  const article = {
    '@context': 'https://schema.org',
    '@type': 'Article',
    headline: issue.subject,
    description,
    url,
    mainEntityOfPage: url,
    ...(issue.sentAt ? { datePublished: issue.sentAt } : {}),
    ...(issue.thumbnailUrl ? { image: [issue.thumbnailUrl] } : {}),
    ...(issue.category ? { articleSection: issue.category.name } : {}),
    publisher: { '@type': 'Organization', name: site.title, url: site.paths.absolute('') },
  };
  extras.push(`<script type="application/ld+json">${inlineJson(article)}</script>`);
  return extras;
}
