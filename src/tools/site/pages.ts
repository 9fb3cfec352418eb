// One audited escape guards every page and feed: HTML forbids the same characters.
import { xmlText as escapeHtml } from '../../core/feeds/feeds.js';
import type { IssueDetail, IssueNeighbour, IssueSummary, PublicCategory } from '../../core/public-shapes.js';
import { searchWords } from '../../core/reads/letter-text.js';
import { SLUG_PATTERN } from '../../core/slug.js';
import { letterText, sanitizeLetter, withoutLeadingTitle } from './sanitize.js';

// Page paths are relative to the site's root; links use the site URL's own path, so a site built for a sub-folder works there.
export function createSitePaths(siteUrl: string) {
  const root = new URL(siteUrl);
  if (root.protocol !== 'https:' && root.protocol !== 'http:') throw new Error('the site URL must be http(s)');
  root.search = '';
  root.hash = '';
  if (!root.pathname.endsWith('/')) root.pathname += '/';
  return { absolute: (path: string) => root.href + path, href: (path: string) => escapeHtml(root.pathname + path) };
}

export function archivePath(page: number, category?: string): string {
  const base = category === undefined ? '' : `categories/${category}/`;
  return page <= 1 ? base : `${base}page/${page}/`;
}

export const issuePath = (slug: string) => `issues/${slug}/`;
export const SEARCH_PATH = 'search/';
export const FEED_PATH = 'feed.xml';
export const fileOf = (path: string) => (path === '' || path.endsWith('/') ? `${path}index.html` : path);
export const isSafeSegment = (slug: string) => SLUG_PATTERN.test(slug);

export type SiteIdentity = { title: string; description: string; subscribeForm: string; paths: ReturnType<typeof createSitePaths> };

// JSON inside `<script>`: no value can close the element; U+2028/U+2029 escaped for older parsers.
function inlineJson(value: unknown): string {
  return JSON.stringify(value).replace(/[<>&\u2028\u2029]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];

// "15 November 2026" in UTC, by hand so the bytes do not depend on the ICU build.
function timeHtml(iso: string | null): string {
  if (!iso) return '';
  const date = new Date(iso);
  return `<time datetime="${escapeHtml(iso)}">${date.getUTCDate()} ${MONTHS[date.getUTCMonth()]} ${date.getUTCFullYear()}</time>`;
}

function truncate(text: string, max: number): string {
  if (text.length <= max) return text;
  const cut = text.slice(0, max - 1);
  const space = cut.lastIndexOf(' ');
  return `${(space > max / 2 ? cut.slice(0, space) : cut).trimEnd()}…`;
}

// `socialTitle`: on a shared card the site's name shows anyway; `extra`: already HTML.
type HeadTags = { title: string; socialTitle?: string; description: string; canonical?: string; image?: string | null; extra?: string[] };

function renderPage(site: SiteIdentity, tags: HeadTags & { ogType?: 'article' }, main: string, skipLinkLabel: string): string {
  const meta = (attribute: 'name' | 'property', key: string, value: string) =>
    `<meta ${attribute}="${key}" content="${escapeHtml(value)}">`;
  const social = tags.socialTitle ?? tags.title;
  const head = [
    `<title>${escapeHtml(tags.title)}</title>`,
    meta('name', 'description', tags.description),
    ...(tags.canonical ? [`<link rel="canonical" href="${escapeHtml(tags.canonical)}">`] : []),
    meta('property', 'og:site_name', site.title),
    meta('property', 'og:type', tags.ogType ?? 'website'),
    meta('property', 'og:title', social),
    meta('property', 'og:description', tags.description),
    ...(tags.canonical ? [meta('property', 'og:url', tags.canonical)] : []),
    ...(tags.image ? [meta('property', 'og:image', tags.image)] : []),
    meta('name', 'twitter:card', tags.image ? 'summary_large_image' : 'summary'),
    meta('name', 'twitter:title', social),
    meta('name', 'twitter:description', tags.description),
    ...(tags.image ? [meta('name', 'twitter:image', tags.image)] : []),
    ...(tags.extra ?? []),
  ].join('\n');
  const href = site.paths.href;
  const title = escapeHtml(site.title);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<!-- The no-JavaScript subscribe path redirects back to the Referer: keep it sent even if the host says no-referrer. -->
<meta name="referrer" content="strict-origin-when-cross-origin">
${head}
<link rel="alternate" type="application/atom+xml" title="${title}" href="${href(FEED_PATH)}">
<link rel="icon" href="${href('favicon.svg')}" type="image/svg+xml">
<link rel="stylesheet" href="${href('style.css')}">
<script src="${href('subscribe.js')}" defer></script>
</head>
<body>
<a class="skip-link" href="#main">${escapeHtml(skipLinkLabel)}</a>
<header class="site-header">
  <div class="wrap">
    <a class="brand" href="${href('')}">${title}</a>
    <p class="tagline">${escapeHtml(site.description)}</p>
  </div>
</header>
<main id="main" class="wrap layout">
${main}
<aside class="subscribe-box" aria-labelledby="subscribe-title">
  <h2 id="subscribe-title">Get the next issue</h2>
  <p>New issues by email. No spam, and you can leave with one click.</p>
${site.subscribeForm}
</aside>
</main>
<footer class="site-footer">
  <div class="wrap">
    <p><a href="${href('')}">Archive</a> · <a href="${href(FEED_PATH)}">Atom feed</a></p>
  </div>
</footer>
</body>
</html>
`;
}

const SNIPPET_SERVICE = 'https://newsletter-bff.example.com';
const SNIPPET_NAME = 'of the newsletter.';

export function subscribeFormFrom(snippet: string, apiUrl: string, title: string): string {
  const form = /<form[\s\S]*<\/form>/.exec(snippet)?.[0];
  if (!form?.includes(SNIPPET_SERVICE)) throw new Error('the subscribe form snippet has no <form> posting to its placeholder address');
  return form.replaceAll(SNIPPET_SERVICE, escapeHtml(apiUrl.replace(/\/+$/, ''))).replace(SNIPPET_NAME, `of ${escapeHtml(title)}.`);
}

type ArchivePage = { issues: readonly IssueSummary[]; page: number; pages: number; total: number; categories: readonly PublicCategory[] };

export function renderArchivePage(site: SiteIdentity, view: ArchivePage & { category?: PublicCategory }): string {
  const { paths } = site;
  const slug = view.category?.slug;
  const heading = view.category ? view.category.name : 'Archive';
  const title = [heading, view.page > 1 ? `page ${view.page}` : undefined, site.title].filter(Boolean).join(' · ');
  const description = view.category ? `Issues of ${site.title} in ${view.category.name}.` : site.description;
  const [newer, older] = [view.page - 1, view.page + 1].map((to) =>
    to >= 1 && to <= view.pages ? paths.href(archivePath(to, slug)) : undefined,
  );
  const extra = [...(newer ? [`<link rel="prev" href="${newer}">`] : []), ...(older ? [`<link rel="next" href="${older}">`] : [])];
  const categoryLink = (label: string, target: string | undefined) =>
    `<li><a href="${paths.href(archivePath(1, target))}"${target === slug ? ' aria-current="page"' : ''}>${escapeHtml(label)}</a></li>`;
  const nav = view.categories.length
    ? `<nav class="categories" aria-label="Categories"><ul>${[categoryLink('All issues', undefined), ...view.categories.map((c) => categoryLink(c.name, c.slug))].join('')}</ul></nav>`
    : '';
  const list = view.issues.length
    ? `<ol class="issue-list">\n${view.issues.map((issue) => issueCard(site, issue)).join('\n')}\n</ol>`
    : `<div class="state"><p>No issues here yet.</p></div>`;
  const pagerLink = (to: string | undefined, rel: string, label: string) =>
    to ? `<a href="${to}" rel="${rel}">${label}</a>` : '<span></span>';
  const pager = `${pagerLink(newer, 'prev', '← Newer issues')}<span>Page ${view.page} of ${view.pages}</span>${pagerLink(older, 'next', 'Older issues →')}`;
  const pagerNav = view.pages > 1 ? `<nav class="pager" aria-label="Archive pages">${pager}</nav>` : '';
  const main = `<section class="archive" aria-labelledby="archive-title">
<h1 id="archive-title">${escapeHtml(heading)}</h1>
${searchForm(site)}
${nav}
<p class="summary">${view.total} ${view.total === 1 ? 'issue' : 'issues'} · page ${view.page} of ${view.pages}</p>
${list}
${pagerNav}
</section>`;
  const canonical = paths.absolute(archivePath(view.page, slug));
  return renderPage(site, { title, description, canonical, extra }, main, 'Skip to the archive');
}

function searchForm(site: SiteIdentity): string {
  return `<form class="search" id="search" role="search" method="get" action="${site.paths.href(SEARCH_PATH)}">
<label for="search-q">Search the archive</label>
<div class="search-row"><input id="search-q" name="q" type="search" maxlength="200" autocomplete="off" spellcheck="false"><button type="submit">Search</button></div>
</form>`;
}

function issueCard(site: SiteIdentity, issue: IssueSummary): string {
  const image = issue.thumbnailUrl ? `<img src="${escapeHtml(issue.thumbnailUrl)}" alt="" loading="lazy" decoding="async">` : '';
  return `<li class="issue-card">
<div class="thumb">${image}</div>
<div class="issue-text">
<h2><a href="${site.paths.href(issuePath(issue.slug))}">${escapeHtml(issue.subject)}</a></h2>
${metaLine(site, issue)}
${issue.previewText ? `<p class="preview">${escapeHtml(issue.previewText)}</p>` : ''}
</div>
</li>`;
}

function metaLine(site: SiteIdentity, { sentAt, category, readingMinutes }: IssueSummary): string {
  // A slug that cannot be a folder name has no page: the name, unlinked.
  const categoryHtml = !category
    ? ''
    : isSafeSegment(category.slug)
      ? `<a class="category" href="${site.paths.href(archivePath(1, category.slug))}">${escapeHtml(category.name)}</a>`
      : `<span class="category">${escapeHtml(category.name)}</span>`;
  const parts = [timeHtml(sentAt), categoryHtml, readingMinutes === null ? '' : `${readingMinutes} min read`];
  return `<p class="meta">${parts.filter(Boolean).join(' · ')}</p>`;
}

export function renderIssuePage(site: SiteIdentity, issue: IssueDetail, { newer, older }: Pick<IssueDetail, 'newer' | 'older'>): string {
  const url = site.paths.absolute(issuePath(issue.slug));
  const letter = issue.contentHtml ? withoutLeadingTitle(sanitizeLetter(issue.contentHtml), issue.subject) : '';
  const description = truncate(issue.previewText || letterText(letter) || site.description, 160);
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
  const extra = [
    ...(issue.sentAt ? [`<meta property="article:published_time" content="${escapeHtml(issue.sentAt)}">`] : []),
    ...(issue.category ? [`<meta property="article:section" content="${escapeHtml(issue.category.name)}">`] : []),
    `<script type="application/ld+json">${inlineJson(article)}</script>`,
  ];
  const tags = { title: `${issue.subject} · ${site.title}`, socialTitle: issue.subject, description, canonical: url, extra };
  const link = (to: IssueNeighbour | null, rel: 'prev' | 'next', label: string) =>
    to ? `<a class="${rel === 'prev' ? 'newer' : 'older'}" href="${site.paths.href(issuePath(to.slug))}" rel="${rel}">${label}</a>` : '';
  const nav =
    newer || older
      ? `<nav class="neighbours" aria-label="Newer and older issues">${link(newer, 'prev', `← Newer: ${escapeHtml(newer?.subject ?? '')}`)}${link(older, 'next', `Older: ${escapeHtml(older?.subject ?? '')} →`)}</nav>`
      : '';
  const main = `<div class="issue-page">
<p class="back"><a href="${site.paths.href('')}">← All issues</a></p>
<article class="issue" aria-labelledby="issue-title">
<header class="issue-header">
${metaLine(site, issue)}
<h1 id="issue-title">${escapeHtml(issue.subject)}</h1>
${issue.previewText ? `<p class="preview">${escapeHtml(issue.previewText)}</p>` : ''}
</header>
${letter ? `<div class="letter">\n${letter}\n</div>` : '<p class="state">This issue has no web version.</p>'}
</article>
${nav}
</div>`;
  return renderPage(site, { ...tags, image: issue.thumbnailUrl, ogType: 'article' }, main, 'Skip to the issue');
}

const NOINDEX = '<meta name="robots" content="noindex">';

// Every issue with the words search.js filters by without a service (or the browser's find without JavaScript).
export function renderSearchPage(site: SiteIdentity, issues: readonly IssueSummary[], searchApiUrl: string | undefined): string {
  const api = searchApiUrl ? ` data-api="${escapeHtml(searchApiUrl)}"` : '';
  const script = `<script src="${site.paths.href('search.js')}" defer data-root="${site.paths.href('')}"${api}></script>`;
  const description = `Search the archive of ${site.title}.`;
  const tags = { title: `Search · ${site.title}`, description, canonical: site.paths.absolute(SEARCH_PATH), extra: [NOINDEX, script] };
  const item = (issue: IssueSummary) => {
    const words = [...new Set(searchWords([issue.subject, issue.previewText ?? '', issue.category?.name ?? ''].join(' ')))].join(' ');
    const parts = [
      `<a href="${site.paths.href(issuePath(issue.slug))}">${escapeHtml(issue.subject)}</a>`,
      timeHtml(issue.sentAt),
      issue.category ? escapeHtml(issue.category.name) : '',
    ];
    return `<li data-words="${escapeHtml(words)}">${parts.filter(Boolean).join(' · ')}</li>`;
  };
  const main = `<section class="archive" aria-labelledby="search-title">
<h1 id="search-title">Search</h1>
${searchForm(site)}
<p class="summary" id="search-summary" aria-live="polite"></p>
<ol class="issue-list" id="search-results" hidden></ol>
<p><button type="button" id="search-more" hidden>More results</button></p>
<div id="search-all">
<p>Every issue, newest first${searchApiUrl ? '' : ' (the search box filters them by subject, preview and category)'}:</p>
<ol class="all-issues">
${issues.map(item).join('\n')}
</ol>
</div>
</section>`;
  return renderPage(site, tags, main, 'Skip to the search');
}

export function renderNotFoundPage(site: SiteIdentity): string {
  const main = `<div class="state">
<h1>Page not found</h1>
<p>There is nothing at this address. The issue may have been renamed or unpublished.</p>
<p><a href="${site.paths.href('')}">Browse the archive</a></p>
</div>`;
  const tags = { title: `Page not found · ${site.title}`, description: site.description, extra: [NOINDEX] };
  return renderPage(site, tags, main, 'Skip to the content');
}
