// The archive page: categories, search, one page of issues, paging. State lives in the URL
// (?category=slug&page=N, ?q=words&page=N), so every view has an address and the back button works.
import { ApiFailure, el, getJson, safeImageUrl, showState, SLUG_PATTERN, timeElement } from './api.js';

const PAGE_SIZE = 10;
// The service refuses offsets beyond its archive cap (ARCHIVE_MAX_ISSUES, 5000 by default).
const MAX_PAGE = 500;
// The service refuses a longer search (a 422).
const MAX_SEARCH = 200;

const params = new URLSearchParams(window.location.search);
const requestedCategory = params.get('category');
const category = requestedCategory && SLUG_PATTERN.test(requestedCategory) ? requestedCategory : undefined;
const page = parsePage(params.get('page'));
/** What the search box asked for ('' for none): a search is across every category. */
const q = [...(params.get('q') ?? '').trim()].slice(0, MAX_SEARCH).join('');
/** The active category's name, once the categories have loaded. */
let categoryName;

const nodes = {
  summary: document.getElementById('archive-summary'),
  list: document.getElementById('issue-list'),
  emptyText: document.getElementById('archive-empty-text'),
  categories: document.getElementById('categories'),
  categoryList: document.getElementById('category-list'),
  pager: document.getElementById('pager'),
  newer: document.getElementById('pager-newer'),
  older: document.getElementById('pager-older'),
  position: document.getElementById('pager-position'),
  search: document.getElementById('search-q'),
};
const states = {
  loading: document.getElementById('archive-loading'),
  content: nodes.list,
  empty: document.getElementById('archive-empty'),
  error: document.getElementById('archive-error'),
};

function parsePage(value) {
  const number = /^\d{1,4}$/.test(value ?? '') ? Number(value) : 1;
  return Math.min(Math.max(number, 1), MAX_PAGE);
}

/** This page's address for another page or category, or (`words`) of the search shown (relative, so the site works in a subfolder). */
function viewHref(toPage, toCategory, words) {
  const query = new URLSearchParams();
  if (words) query.set('q', words);
  else if (toCategory) query.set('category', toCategory);
  if (toPage > 1) query.set('page', String(toPage));
  const search = query.toString();
  return search ? `?${search}` : window.location.pathname;
}

async function loadCategories() {
  let categories;
  try {
    ({ data: categories } = await getJson('/api/categories'));
  } catch {
    return; // The archive is still useful without its filter.
  }
  const item = (label, slug) => {
    const current = !q && slug === category;
    const link = el('a', { href: viewHref(1, slug), 'aria-current': current ? 'page' : undefined }, label);
    return el('li', {}, link);
  };
  nodes.categoryList.replaceChildren(item('All issues', undefined), ...categories.map((c) => item(c.name, c.slug)));
  nodes.categories.hidden = false;
  categoryName = categories.find((c) => c.slug === category)?.name;
  updateTitle();
}

function updateTitle() {
  const view = q ? `Search: ${q}` : (categoryName ?? 'Archive');
  document.title = ['The Field Notes', view, page > 1 ? `page ${page}` : undefined].filter(Boolean).join(' · ');
}

function issueCard(issue) {
  const href = `issue.html?slug=${encodeURIComponent(issue.slug)}`;
  const thumb = el('div', { className: 'thumb' });
  const imageUrl = issue.thumbnailUrl ? safeImageUrl(issue.thumbnailUrl) : undefined;
  if (imageUrl) {
    // The box keeps its size either way; an image that fails to load leaves the plain box.
    const image = el('img', { src: imageUrl, alt: '', loading: 'lazy', decoding: 'async' });
    image.addEventListener('error', () => image.remove());
    thumb.append(image);
  }
  const meta = el('p', { className: 'meta' }, timeElement(issue.sentAt));
  if (issue.category) {
    if (meta.childNodes.length) meta.append(' · ');
    meta.append(el('a', { href: viewHref(1, issue.category.slug), className: 'category' }, issue.category.name));
  }
  if (issue.readingMinutes) {
    if (meta.childNodes.length) meta.append(' · ');
    meta.append(`${issue.readingMinutes} min read`);
  }
  return el(
    'li',
    { className: 'issue-card' },
    thumb,
    el(
      'div',
      { className: 'issue-text' },
      el('h2', {}, el('a', { href }, issue.subject)),
      meta,
      issue.previewText ? el('p', { className: 'preview' }, issue.previewText) : undefined,
    ),
  );
}

function renderPager(total) {
  const pages = Math.max(1, Math.ceil(total / PAGE_SIZE));
  nodes.position.textContent = `Page ${page} of ${pages}`;
  setLink(nodes.newer, 'prev', page > 1 ? viewHref(Math.min(page - 1, pages), category, q) : undefined);
  setLink(nodes.older, 'next', page < pages ? viewHref(page + 1, category, q) : undefined);
  nodes.pager.hidden = pages === 1 && page === 1;
}

function setLink(link, rel, href) {
  // A missing page is a disabled link: no href (not focusable), announced as unavailable, and
  // without `rel`, which HTML allows only on a link with an href.
  if (href) {
    link.href = href;
    link.rel = rel;
    link.removeAttribute('aria-disabled');
  } else {
    link.removeAttribute('href');
    link.removeAttribute('rel');
    link.setAttribute('aria-disabled', 'true');
  }
}

async function loadArchive() {
  // Search results the server already rendered (demo mode) stay in view while they are read again.
  if (document.body.dataset.rendered !== 'search') {
    showState(states, 'loading');
    nodes.summary.textContent = '';
    nodes.pager.hidden = true;
  }
  if (!q && requestedCategory !== null && !category) {
    nodes.emptyText.textContent = 'There is no such category.';
    showState(states, 'empty');
    return;
  }
  const query = new URLSearchParams({ limit: String(PAGE_SIZE), offset: String((page - 1) * PAGE_SIZE) });
  if (q) query.set('q', q);
  else if (category) query.set('category', category);
  let body;
  try {
    body = await getJson(`/api/issues?${query}`);
  } catch (error) {
    if (error instanceof ApiFailure && error.status === 422) {
      nodes.emptyText.textContent = 'There is no such page of the archive.';
      showState(states, 'empty');
    } else {
      showState(states, 'error');
    }
    return;
  }
  const { data: issues, meta } = body;
  if (issues.length === 0) {
    nodes.emptyText.textContent =
      meta.total > 0
        ? 'This page is empty.'
        : q
          ? `No issues match “${q}”.`
          : category
            ? 'No issues in this category yet.'
            : 'No issues have been published yet.';
    showState(states, 'empty');
    if (meta.total > 0) renderPager(meta.total);
    return;
  }
  nodes.list.replaceChildren(...issues.map(issueCard));
  const pages = Math.max(1, Math.ceil(meta.total / PAGE_SIZE));
  const counted = q ? `${meta.total} ${meta.total === 1 ? 'issue matches' : 'issues match'} “${q}”` : `${meta.total} ${meta.total === 1 ? 'issue' : 'issues'}`;
  nodes.summary.textContent = `${counted} · page ${page} of ${pages}`;
  showState(states, 'content');
  renderPager(meta.total);
}

document.getElementById('archive-retry').addEventListener('click', () => {
  loadArchive();
});
nodes.search.value = q;
updateTitle();
loadCategories();
loadArchive();
