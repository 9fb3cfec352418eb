import type { MiddlewareHandler } from 'hono';
import { readdir, readFile } from 'node:fs/promises';
import { extname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createCopyChooser, ifNoneMatchMatches } from '../core/http/read-reply.js';
import type { ArchivePageBody, IssueSummary } from '../core/public-shapes.js';
import { cacheControlOf, NO_STORE, SITE_POLICIES } from '../core/reads/cache-policies.js';
import { renderedWithEtag, strongEtag, withEncodedCopies } from '../core/reads/rendered-json.js';
import { createNodeBodyEncoder } from '../node/compression.js';

const SITE_KEY_LINE = "window.NEWSLETTER_TURNSTILE_SITE_KEY = '';";

// `true`: text worth compressing (images other than SVG already are).
const TYPES: Readonly<Record<string, [type: string, text: boolean]>> = {
  '.html': ['text/html; charset=utf-8', true],
  '.css': ['text/css; charset=utf-8', true],
  '.js': ['text/javascript; charset=utf-8', true],
  '.svg': ['image/svg+xml', true],
  '.ico': ['image/x-icon', false],
};

// `api`: the service's own routes in process, so the archive page with `?q=` comes with its matches.
export function createDemoSite(
  turnstileSiteKey: string | undefined,
  { api }: { api?: (path: string, env: unknown) => Promise<Response> } = {},
): MiddlewareHandler {
  const root = fileURLToPath(new URL('../../examples/site', import.meta.url));
  let files: ReturnType<typeof readSite> | undefined;
  const chooseCopy = createCopyChooser();
  return async function serveDemoSite(c, next) {
    files ??= readSite(root, turnstileSiteKey);
    const path = c.req.path === '/' ? '/index.html' : c.req.path;
    const file = (await files).get(path);
    if (!file) return next();
    const q = c.req.query('q');
    if (path === '/index.html' && q !== undefined && api) {
      const view = { q, page: c.req.query('page') };
      const html = await renderSearchPage(new TextDecoder().decode(file.body), view, (apiPath) => api(apiPath, c.env));
      // Made for this query: not kept by a browser or a cache (the search is cheap, the queries many).
      const headers = { 'Content-Type': file.type, 'Cache-Control': NO_STORE };
      return c.req.method === 'HEAD' ? c.body(null, 200, headers) : c.body(html, 200, headers);
    }
    // Each form has its own ETag: a cache must not answer one encoding's 304 for another.
    const copy = chooseCopy(c.req.header('accept-encoding'), file.copies);
    const headers: Record<string, string> = { 'Cache-Control': file.cacheControl, ETag: (copy ?? file).etag };
    if (file.copies.length > 0) headers.Vary = 'Accept-Encoding';
    if (ifNoneMatchMatches(c.req.header('if-none-match'), headers.ETag!)) return c.body(null, 304, headers);
    headers['Content-Type'] = file.type;
    if (copy) headers['Content-Encoding'] = copy.coding;
    return c.req.method === 'HEAD' ? c.body(null, 200, headers) : c.body((copy ?? file).body, 200, headers);
  };
}

async function readSite(root: string, turnstileSiteKey: string | undefined) {
  const encode = createNodeBodyEncoder({ minBytes: 0 });
  const entries = (await readdir(root, { recursive: true, withFileTypes: true })).filter((entry) => entry.isFile());
  const read = entries.map(async (entry) => {
    const full = join(entry.parentPath, entry.name);
    const path = `/${relative(root, full).split(sep).join('/')}`;
    let body = new Uint8Array(await readFile(full));
    if (path === '/config.js' && turnstileSiteKey) {
      // The key is letters, digits, `_` and `-` (config checks it), so it is safe in a JS string.
      const line = `window.NEWSLETTER_TURNSTILE_SITE_KEY = ${JSON.stringify(turnstileSiteKey)};`;
      body = new TextEncoder().encode(new TextDecoder().decode(body).replace(SITE_KEY_LINE, line));
    }
    const [type = 'application/octet-stream', text = false] = TYPES[extname(path)] ?? [];
    const etag = await strongEtag(body);
    const copies = text ? ((await withEncodedCopies(renderedWithEtag(new TextDecoder().decode(body), etag), encode)).encoded ?? []) : [];
    const policy = path.endsWith('.html') || path === '/config.js' ? SITE_POLICIES.sitePage : SITE_POLICIES.siteFile;
    return [path, { type, cacheControl: cacheControlOf(policy), body, etag, copies }] as const;
  });
  return new Map(await Promise.all(read));
}

// The archive page with a search's matches filled in, as archive.js pages, cuts `q` and builds it (docs/contract.md).
const PAGE_SIZE = 10;
const MAX_PAGE = 500;
const MAX_SEARCH = 200;

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

const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);

function replaceOnce(html: string, slot: string | RegExp, replacement: string): string {
  const found = typeof slot === 'string' ? html.includes(slot) : slot.test(html);
  if (!found) throw new Error(`the archive page has no ${String(slot)} to fill in`);
  return html.replace(slot, () => replacement);
}

function card(issue: IssueSummary): string {
  const meta = [
    issue.sentAt && `<time datetime="${escapeHtml(issue.sentAt)}">${escapeHtml(dateFormat.format(new Date(issue.sentAt)))}</time>`,
    issue.category &&
      `<a href="?category=${encodeURIComponent(issue.category.slug)}" class="category">${escapeHtml(issue.category.name)}</a>`,
    issue.readingMinutes && `${issue.readingMinutes} min read`,
  ];
  const image = issue.thumbnailUrl ? `<img src="${escapeHtml(issue.thumbnailUrl)}" alt="" loading="lazy" decoding="async">` : '';
  return (
    `<li class="issue-card"><div class="thumb">${image}</div><div class="issue-text">` +
    `<h2><a href="issue.html?slug=${encodeURIComponent(issue.slug)}">${escapeHtml(issue.subject)}</a></h2>` +
    `<p class="meta">${meta.filter(Boolean).join(' · ')}</p>` +
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

async function renderSearchPage(template: string, view: { q: string; page: string | undefined }, api: (path: string) => Promise<Response>) {
  const q = [...view.q.trim()].slice(0, MAX_SEARCH).join('');
  const pageNumber = /^\d{1,4}$/.test(view.page ?? '') ? Math.min(Math.max(Number(view.page), 1), MAX_PAGE) : 1;
  const titleParts = ['The Field Notes', q ? `Search: ${q}` : 'Archive', pageNumber > 1 ? `page ${pageNumber}` : undefined];
  let html = replaceOnce(template, SLOTS.title, `<title>${escapeHtml(titleParts.filter(Boolean).join(' · '))}</title>`);
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
  if (body.data.length === 0)
    return state(total > 0 ? 'This page is empty.' : q ? `No issues match “${escapeHtml(q)}”.` : 'No issues have been published yet.');
  const counted = q
    ? `${total} ${total === 1 ? 'issue matches' : 'issues match'} “${escapeHtml(q)}”`
    : `${total} ${total === 1 ? 'issue' : 'issues'}`;
  const summary = SLOTS.summary.replace('</p>', () => `${counted} · page ${pageNumber} of ${pages}</p>`);
  html = replaceOnce(html, SLOTS.summary, summary);
  return replaceOnce(html, SLOTS.list, `<ol class="issue-list" id="issue-list">${body.data.map(card).join('')}</ol>`);
}
