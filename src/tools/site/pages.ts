import type { IssueDetail, IssueNeighbour, IssueSummary, PublicCategory } from '../../core/public-shapes.js';
import { searchWords } from '../../core/reads/letter-text.js';
import { articleExtras, renderHead } from './head.js';
import { escapeHtml, timeHtml, truncate } from './html.js';
import { renderPage, type SiteIdentity } from './layout.js';
import { archivePath, isSafeSegment, issuePath, SEARCH_PATH } from './paths.js';
import { letterText, sanitizeLetter, withoutLeadingTitle } from './sanitize.js';

// Search engines show about this much of a description.
const DESCRIPTION_MAX = 160;

export interface ArchivePage {
  issues: readonly IssueSummary[];
  page: number;
  pages: number;
  total: number;
  /** None for the whole archive. */
  category?: PublicCategory;
  categories: readonly PublicCategory[];
}

export function renderArchivePage(site: SiteIdentity, view: ArchivePage): string {
  const { paths } = site;
  const slug = view.category?.slug;
  const heading = view.category ? view.category.name : 'Archive';
  const title = [heading, view.page > 1 ? `page ${view.page}` : undefined, site.title].filter(Boolean).join(' · ');
  const description = view.category ? `Issues of ${site.title} in ${view.category.name}.` : site.description;
  const pager = (page: number) => paths.href(archivePath(page, slug));
  const extra = [
    ...(view.page > 1 ? [`<link rel="prev" href="${escapeHtml(pager(view.page - 1))}">`] : []),
    ...(view.page < view.pages ? [`<link rel="next" href="${escapeHtml(pager(view.page + 1))}">`] : []),
  ];
  const head = renderHead(site, { title, description, canonical: paths.absolute(archivePath(view.page, slug)), extra }, 'website');
  const categoryLink = (label: string, target: string | undefined) =>
    `<li><a href="${escapeHtml(paths.href(archivePath(1, target)))}"${target === slug ? ' aria-current="page"' : ''}>${escapeHtml(label)}</a></li>`;
  const nav = view.categories.length
    ? `<nav class="categories" aria-label="Categories"><ul>${[categoryLink('All issues', undefined), ...view.categories.map((c) => categoryLink(c.name, c.slug))].join('')}</ul></nav>`
    : '';
  const list = view.issues.length
    ? `<ol class="issue-list">\n${view.issues.map((issue) => issueCard(site, issue)).join('\n')}\n</ol>`
    : `<div class="state"><p>No issues here yet.</p></div>`;
  const pagerNav =
    view.pages > 1
      ? `<nav class="pager" aria-label="Archive pages">` +
        (view.page > 1 ? `<a href="${escapeHtml(pager(view.page - 1))}" rel="prev">← Newer issues</a>` : '<span></span>') +
        `<span>Page ${view.page} of ${view.pages}</span>` +
        (view.page < view.pages ? `<a href="${escapeHtml(pager(view.page + 1))}" rel="next">Older issues →</a>` : '<span></span>') +
        `</nav>`
      : '';
  const main = `<section class="archive" aria-labelledby="archive-title">
<h1 id="archive-title">${escapeHtml(heading)}</h1>
${searchForm(site)}
${nav}
<p class="summary">${view.total} ${view.total === 1 ? 'issue' : 'issues'} · page ${view.page} of ${view.pages}</p>
${list}
${pagerNav}
</section>`;
  return renderPage(site, { head, main, skipLinkLabel: 'Skip to the archive' });
}

function searchForm(site: SiteIdentity, value = ''): string {
  return `<form class="search" id="search" role="search" method="get" action="${escapeHtml(site.paths.href(SEARCH_PATH))}">
<label for="search-q">Search the archive</label>
<div class="search-row"><input id="search-q" name="q" type="search" maxlength="200" autocomplete="off" spellcheck="false"${value ? ` value="${escapeHtml(value)}"` : ''}><button type="submit">Search</button></div>
</form>`;
}

function issueCard(site: SiteIdentity, issue: IssueSummary): string {
  const href = escapeHtml(site.paths.href(issuePath(issue.slug)));
  const image = issue.thumbnailUrl ? `<img src="${escapeHtml(issue.thumbnailUrl)}" alt="" loading="lazy" decoding="async">` : '';
  return `<li class="issue-card">
<div class="thumb">${image}</div>
<div class="issue-text">
<h2><a href="${href}">${escapeHtml(issue.subject)}</a></h2>
${metaLine(site, issue)}
${issue.previewText ? `<p class="preview">${escapeHtml(issue.previewText)}</p>` : ''}
</div>
</li>`;
}

function metaLine(site: SiteIdentity, issue: IssueSummary): string {
  const parts = [timeHtml(issue.sentAt)].filter(Boolean);
  if (issue.category && isSafeSegment(issue.category.slug)) {
    const href = site.paths.href(archivePath(1, issue.category.slug));
    parts.push(`<a class="category" href="${escapeHtml(href)}">${escapeHtml(issue.category.name)}</a>`);
  } else if (issue.category) {
    // No page for a slug that cannot be a folder name: the name, unlinked.
    parts.push(`<span class="category">${escapeHtml(issue.category.name)}</span>`);
  }
  if (issue.readingMinutes !== null) parts.push(`${issue.readingMinutes} min read`);
  return `<p class="meta">${parts.join(' · ')}</p>`;
}

export interface Neighbours {
  newer: IssueNeighbour | null;
  older: IssueNeighbour | null;
}

function neighboursNav(site: SiteIdentity, neighbours: Neighbours): string {
  if (!neighbours.newer && !neighbours.older) return '';
  const link = (issue: IssueNeighbour | null, rel: 'prev' | 'next', label: string) =>
    issue
      ? `<a class="${rel === 'prev' ? 'newer' : 'older'}" href="${escapeHtml(site.paths.href(issuePath(issue.slug)))}" rel="${rel}">${label}</a>`
      : '';
  return `<nav class="neighbours" aria-label="Newer and older issues">${link(neighbours.newer, 'prev', `← Newer: ${escapeHtml(neighbours.newer?.subject ?? '')}`)}${link(neighbours.older, 'next', `Older: ${escapeHtml(neighbours.older?.subject ?? '')} →`)}</nav>`;
}

/** The letter's sanitised HTML inline: indexable, readable without JavaScript. */
export function renderIssuePage(
  site: SiteIdentity,
  issue: IssueDetail,
  neighbours: Neighbours = { newer: issue.newer, older: issue.older },
): string {
  const url = site.paths.absolute(issuePath(issue.slug));
  const letter = issue.contentHtml ? withoutLeadingTitle(sanitizeLetter(issue.contentHtml), issue.subject) : '';
  const description = truncate(issue.previewText || letterText(letter) || site.description, DESCRIPTION_MAX);
  const head = renderHead(
    site,
    {
      title: `${issue.subject} · ${site.title}`,
      socialTitle: issue.subject,
      description,
      canonical: url,
      image: issue.thumbnailUrl,
      extra: articleExtras(site, issue, url, description),
    },
    'article',
  );
  const main = `<div class="issue-page">
<p class="back"><a href="${escapeHtml(site.paths.href(''))}">← All issues</a></p>
<article class="issue" aria-labelledby="issue-title">
<header class="issue-header">
${metaLine(site, issue)}
<h1 id="issue-title">${escapeHtml(issue.subject)}</h1>
${issue.previewText ? `<p class="preview">${escapeHtml(issue.previewText)}</p>` : ''}
</header>
${letter ? `<div class="letter">\n${letter}\n</div>` : '<p class="state">This issue has no web version.</p>'}
</article>
${neighboursNav(site, neighbours)}
</div>`;
  return renderPage(site, { head, main, skipLinkLabel: 'Skip to the issue' });
}

/** The box, and every issue with the words search.js filters by without a service (or the browser's find without JavaScript). */
export function renderSearchPage(site: SiteIdentity, issues: readonly IssueSummary[], searchApiUrl: string | undefined): string {
  const head = [
    renderHead(
      site,
      { title: `Search · ${site.title}`, description: `Search the archive of ${site.title}.`, canonical: site.paths.absolute(SEARCH_PATH) },
      'website',
    ),
    '<meta name="robots" content="noindex">',
    `<script src="${escapeHtml(site.paths.href('search.js'))}" defer data-root="${escapeHtml(site.paths.href(''))}"${searchApiUrl ? ` data-api="${escapeHtml(searchApiUrl)}"` : ''}></script>`,
  ].join('\n');
  const item = (issue: IssueSummary) => {
    const words = [...new Set(searchWords([issue.subject, issue.previewText ?? '', issue.category?.name ?? ''].join(' ')))].join(' ');
    const parts = [
      `<a href="${escapeHtml(site.paths.href(issuePath(issue.slug)))}">${escapeHtml(issue.subject)}</a>`,
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
  return renderPage(site, { head, main, skipLinkLabel: 'Skip to the search' });
}

export function renderNotFoundPage(site: SiteIdentity): string {
  const head = [
    renderHead(site, { title: `Page not found · ${site.title}`, description: site.description }, 'website'),
    '<meta name="robots" content="noindex">',
  ].join('\n');
  const main = `<div class="state">
<h1>Page not found</h1>
<p>There is nothing at this address. The issue may have been renamed or unpublished.</p>
<p><a href="${escapeHtml(site.paths.href(''))}">Browse the archive</a></p>
</div>`;
  return renderPage(site, { head, main, skipLinkLabel: 'Skip to the content' });
}
