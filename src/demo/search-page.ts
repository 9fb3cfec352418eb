import type { ArchivePageBody, IssueSummary } from '../core/public-shapes.js';

// Demo mode: examples/site/index.html with a search's matches filled in, for a reader without
// JavaScript. The markup is what archive.js builds; values are escaped.

// As archive.js pages and cuts `q` (docs/contract.md).
const PAGE_SIZE = 10;
const MAX_PAGE = 500;
const MAX_SEARCH = 200;

// As they stand in the file (a test renders the page from the real file).
const SLOTS = {
  title: '<title>The Field Notes · Archive</title>',
  body: '<body>',
  input: '<input id="search-q" name="q" type="search"',
  summary: '<p class="summary" id="archive-summary" aria-live="polite"></p>',
  list: '<ol class="issue-list" id="issue-list" hidden></ol>',
  empty: '<div class="state" id="archive-empty" hidden>',
  emptyText: '<p id="archive-empty-text">No issues here yet.</p>',
  pager: /<nav class="pager" id="pager" aria-label="Archive pages" hidden>[\s\S]*?<\/nav>/,
  noscript: /<noscript>\s*<div class="state"><p>The archive needs JavaScript[\s\S]*?<\/noscript>/,
} as const;

const dateFormat = new Intl.DateTimeFormat('en-GB', { dateStyle: 'long', timeZone: 'UTC' });

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);
}

function replaceOnce(html: string, slot: string | RegExp, replacement: string): string {
  const found = typeof slot === 'string' ? html.includes(slot) : slot.test(html);
  if (!found) throw new Error(`the archive page has no ${String(slot)} to fill in`);
  return html.replace(slot, () => replacement);
}

function card(issue: IssueSummary): string {
  const meta: string[] = [];
  if (issue.sentAt)
    meta.push(`<time datetime="${escapeHtml(issue.sentAt)}">${escapeHtml(dateFormat.format(new Date(issue.sentAt)))}</time>`);
  if (issue.category)
    meta.push(`<a href="?category=${encodeURIComponent(issue.category.slug)}" class="category">${escapeHtml(issue.category.name)}</a>`);
  if (issue.readingMinutes) meta.push(`${issue.readingMinutes} min read`);
  const image = issue.thumbnailUrl ? `<img src="${escapeHtml(issue.thumbnailUrl)}" alt="" loading="lazy" decoding="async">` : '';
  return (
    `<li class="issue-card"><div class="thumb">${image}</div><div class="issue-text">` +
    `<h2><a href="issue.html?slug=${encodeURIComponent(issue.slug)}">${escapeHtml(issue.subject)}</a></h2>` +
    `<p class="meta">${meta.join(' · ')}</p>` +
    (issue.previewText ? `<p class="preview">${escapeHtml(issue.previewText)}</p>` : '') +
    `</div></li>`
  );
}

function pagerHtml(q: string, page: number, pages: number): string {
  const link = (id: string, to: number | false, rel: string, label: string) =>
    to
      ? `<a id="${id}" href="${escapeHtml(`?${new URLSearchParams({ q, ...(to > 1 ? { page: String(to) } : {}) })}`)}" rel="${rel}">${label}</a>`
      : `<a id="${id}" aria-disabled="true">${label}</a>`;
  const newer = link('pager-newer', page > 1 && Math.min(page - 1, pages), 'prev', '← Newer issues');
  const older = link('pager-older', page < pages && page + 1, 'next', 'Older issues →');
  return `<nav class="pager" id="pager" aria-label="Archive pages"${pages > 1 ? '' : ' hidden'}>${newer}<span id="pager-position">Page ${page} of ${pages}</span>${older}</nav>`;
}

export async function renderSearchPage(
  template: string,
  view: { q: string; page: string | undefined },
  api: (path: string) => Promise<Response>,
): Promise<string> {
  const q = [...view.q.trim()].slice(0, MAX_SEARCH).join('');
  const pageNumber = /^\d{1,4}$/.test(view.page ?? '') ? Math.min(Math.max(Number(view.page), 1), MAX_PAGE) : 1;
  const title = ['The Field Notes', q ? `Search: ${q}` : 'Archive', pageNumber > 1 ? `page ${pageNumber}` : undefined]
    .filter(Boolean)
    .join(' · ');
  let html = replaceOnce(template, SLOTS.title, `<title>${escapeHtml(title)}</title>`);
  html = replaceOnce(html, SLOTS.body, '<body data-rendered="search">');
  html = replaceOnce(html, SLOTS.input, `${SLOTS.input} value="${escapeHtml(q)}"`);
  html = replaceOnce(html, SLOTS.noscript, '');
  const query = new URLSearchParams({ q, limit: String(PAGE_SIZE), offset: String((pageNumber - 1) * PAGE_SIZE) });
  const response = await api(`/api/issues?${query}`).catch(() => undefined);
  const body = response?.ok ? ((await response.json()) as ArchivePageBody) : undefined;
  const state = (message: string) => {
    const shown = replaceOnce(html, SLOTS.empty, '<div class="state" id="archive-empty">');
    return replaceOnce(shown, SLOTS.emptyText, `<p id="archive-empty-text">${message}</p>`);
  };
  if (!body) return state('Sorry, the archive could not be searched just now. Try again in a moment.');
  const { total } = body.meta;
  const pages = Math.max(1, Math.ceil(total / PAGE_SIZE));
  html = replaceOnce(html, SLOTS.pager, pagerHtml(q, pageNumber, pages));
  if (body.data.length === 0) {
    return state(total > 0 ? 'This page is empty.' : q ? `No issues match “${escapeHtml(q)}”.` : 'No issues have been published yet.');
  }
  const counted = q
    ? `${total} ${total === 1 ? 'issue matches' : 'issues match'} “${escapeHtml(q)}”`
    : `${total} ${total === 1 ? 'issue' : 'issues'}`;
  const summary = SLOTS.summary.replace('</p>', () => `${counted} · page ${pageNumber} of ${pages}</p>`);
  html = replaceOnce(html, SLOTS.summary, summary);
  return replaceOnce(html, SLOTS.list, `<ol class="issue-list" id="issue-list">${body.data.map(card).join('')}</ol>`);
}
