// One issue by slug (issue.html?slug=…): its details as text, its HTML in the sandboxed iframe.
import { ApiFailure, el, getJson, safeImageUrl, showState, SLUG_PATTERN, timeElement } from './api.js';

const slug = new URLSearchParams(window.location.search).get('slug') ?? '';
const frame = document.getElementById('issue-frame');
const states = {
  loading: document.getElementById('issue-loading'),
  content: document.getElementById('issue'),
  missing: document.getElementById('issue-missing'),
  error: document.getElementById('issue-error'),
};

// The frame's own stylesheet: readable defaults for email HTML, which brings its own styles too.
// `<base target="_blank">` opens the issue's links in a new tab (allowed by allow-popups).
const FRAME_HEAD =
  '<meta charset="utf-8"><base target="_blank"><style>' +
  'html{color-scheme:light}body{margin:0;padding:1.5rem;font:1.0625rem/1.65 Georgia,"Iowan Old Style",serif;color:#1f2a1f;overflow-wrap:anywhere}' +
  'h1,h2,h3{font-family:system-ui,sans-serif;line-height:1.25}img{max-width:100%;height:auto}' +
  'blockquote{margin:1.25rem 0;padding:.25rem 1rem;border-left:4px solid #7aa36a;color:#3d4d3d;font-style:italic}' +
  'a{color:#2f6b2f}</style>';

/** Sizes the frame to its content, so the page scrolls as one (possible because of allow-same-origin). */
function fitFrame() {
  const doc = frame.contentDocument;
  if (!doc?.documentElement) return;
  const border = frame.offsetHeight - frame.clientHeight;
  frame.style.height = `${doc.documentElement.scrollHeight + border}px`;
}

/** Sets a `<meta>`'s content, adding the tag when the page does not have it. */
function setMeta(attribute, key, value) {
  let tag = document.head.querySelector(`meta[${attribute}="${key}"]`);
  if (!value) {
    tag?.remove();
    return;
  }
  if (!tag) {
    tag = el('meta', { [attribute]: key });
    document.head.append(tag);
  }
  tag.setAttribute('content', value);
}

/** The head tags a sharing preview or a crawler that runs scripts reads: the issue's own. */
function updateHead(issue) {
  document.title = `${issue.subject} · The Field Notes`;
  const description = issue.previewText || 'An issue of The Field Notes.';
  const image = issue.thumbnailUrl ? safeImageUrl(issue.thumbnailUrl) : undefined;
  setMeta('name', 'description', description);
  setMeta('property', 'og:title', issue.subject);
  setMeta('property', 'og:description', description);
  setMeta('property', 'og:url', window.location.href);
  setMeta('property', 'og:image', image);
  setMeta('property', 'article:published_time', issue.sentAt);
  setMeta('name', 'twitter:card', image ? 'summary_large_image' : 'summary');
  setMeta('name', 'twitter:image', image);
}

/**
 * The letter's HTML without its opening <h1> when that repeats the subject (emails start with
 * their title; this page already shows it). DOMParser's document is inert: nothing in it runs
 * or loads, and the result still goes only into the sandboxed frame.
 */
function withoutRepeatedTitle(html, subject) {
  const doc = new DOMParser().parseFromString(html, 'text/html');
  const first = doc.body.firstElementChild;
  const normal = (text) => text.replace(/\s+/g, ' ').trim().toLowerCase();
  if (first?.tagName === 'H1' && normal(first.textContent ?? '') === normal(subject)) {
    first.remove();
    return doc.head.innerHTML + doc.body.innerHTML;
  }
  return html;
}

/** Links to the issues sent just after and just before this one, where there are such. */
function renderNeighbours(issue) {
  const link = (node, neighbour, rel, label) => {
    node.hidden = !neighbour;
    if (!neighbour) {
      // HTML allows `rel` only on a link with an href.
      node.removeAttribute('href');
      node.removeAttribute('rel');
      node.replaceChildren();
      return;
    }
    node.href = `issue.html?slug=${encodeURIComponent(neighbour.slug)}`;
    node.rel = rel;
    node.replaceChildren(label(neighbour.subject));
  };
  link(document.getElementById('issue-newer'), issue.newer, 'prev', (subject) => `← Newer: ${subject}`);
  link(document.getElementById('issue-older'), issue.older, 'next', (subject) => `Older: ${subject} →`);
  document.getElementById('issue-neighbours').hidden = !issue.newer && !issue.older;
}

function render(issue) {
  updateHead(issue);
  document.getElementById('issue-title').textContent = issue.subject;
  document.getElementById('issue-preview').textContent = issue.previewText ?? '';
  const meta = document.getElementById('issue-meta');
  meta.replaceChildren();
  const time = timeElement(issue.sentAt);
  if (time) meta.append(time);
  if (issue.category) {
    if (meta.childNodes.length) meta.append(' · ');
    meta.append(el('a', { href: `./?category=${encodeURIComponent(issue.category.slug)}` }, issue.category.name));
  }
  if (issue.readingMinutes) {
    if (meta.childNodes.length) meta.append(' · ');
    meta.append(`${issue.readingMinutes} min read`);
  }
  renderNeighbours(issue);
  showState(states, 'content');
  const noContent = document.getElementById('issue-no-content');
  if (!issue.contentHtml) {
    frame.hidden = true;
    noContent.hidden = false;
    return;
  }
  frame.hidden = false;
  noContent.hidden = true;
  frame.addEventListener(
    'load',
    () => {
      fitFrame();
      // Late images change the height; their load events still reach this page's listener.
      frame.contentDocument?.addEventListener('load', fitFrame, true);
    },
    { once: true },
  );
  // HTML on purpose (it is the newsletter as sent), and safe because the frame is sandboxed.
  const letter = withoutRepeatedTitle(issue.contentHtml, issue.subject);
  frame.srcdoc = `<!doctype html><html lang="en"><head>${FRAME_HEAD}</head><body>${letter}</body></html>`;
}

async function load() {
  if (!SLUG_PATTERN.test(slug)) {
    showState(states, 'missing');
    return;
  }
  showState(states, 'loading');
  document.getElementById('issue-neighbours').hidden = true;
  try {
    const { data } = await getJson(`/api/issues/${encodeURIComponent(slug)}`);
    render(data);
  } catch (error) {
    showState(states, error instanceof ApiFailure && (error.status === 404 || error.status === 422) ? 'missing' : 'error');
  }
}

window.addEventListener('resize', fitFrame);
document.getElementById('issue-retry').addEventListener('click', () => {
  load();
});
load();
