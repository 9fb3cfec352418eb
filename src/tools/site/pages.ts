import type { IssueDetail, IssueSummary, PublicCategory } from '../../core/public-shapes.js';
import { articleExtras, renderHead } from './head.js';
import { escapeHtml, timeHtml, truncate } from './html.js';
import { renderPage, type SiteIdentity } from './layout.js';
import { archivePath, isSafeSegment, issuePath } from './paths.js';
import { letterText, sanitizeLetter, withoutLeadingTitle } from './sanitize.js';

// Search engines show about this much of a description.
const DESCRIPTION_MAX = 160;

/** One page of one archive listing (all issues, or one category). */
export interface ArchivePage {
  issues: readonly IssueSummary[];
  page: number;
  pages: number;
  total: number;
  /** The listing's category; none for the whole archive. */
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
${nav}
<p class="summary">${view.total} ${view.total === 1 ? 'issue' : 'issues'} · page ${view.page} of ${view.pages}</p>
${list}
${pagerNav}
</section>`;
  return renderPage(site, { head, main, skipLinkLabel: 'Skip to the archive' });
}

function issueCard(site: SiteIdentity, issue: IssueSummary): string {
  const href = escapeHtml(site.paths.href(issuePath(issue.slug)));
  const image = issue.thumbnailUrl
    ? `<img src="${escapeHtml(issue.thumbnailUrl)}" alt="" loading="lazy" decoding="async">`
    : '';
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
    // The build writes no page for a slug that cannot be a folder name: the name, unlinked.
    parts.push(`<span class="category">${escapeHtml(issue.category.name)}</span>`);
  }
  return `<p class="meta">${parts.join(' · ')}</p>`;
}

/** One issue: its head tags, and the letter's sanitised HTML inline (indexable, readable without JavaScript). */
export function renderIssuePage(site: SiteIdentity, issue: IssueDetail): string {
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
</div>`;
  return renderPage(site, { head, main, skipLinkLabel: 'Skip to the issue' });
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
