// Shared by the example site's pages: the service's address (config.js), JSON reads, DOM helpers.
// Everything from the API is inserted as text (textContent, attributes), never as HTML; the one
// exception is an issue's contentHtml, which issue.js renders inside a sandboxed iframe.

const base = String(window.NEWSLETTER_BFF_URL ?? '').replace(/\/+$/, '');

/** The slug rule of the service (docs/contract.md "GET /api/issues/:slug"): anything else cannot exist. */
export const SLUG_PATTERN = /^[A-Za-z0-9](?:[A-Za-z0-9_-]{0,198}[A-Za-z0-9])?$/;

/** An absolute or same-origin URL of one of the service's routes. */
export function apiUrl(path) {
  return base + path;
}

/** A failed read: `status` 0 when the service could not be reached (network, CORS, timeout). */
export class ApiFailure extends Error {
  constructor(status, code) {
    super(`newsletter-bff answered ${status} ${code}`);
    this.status = status;
    this.code = code;
  }
}

/** GETs a route and returns its `{ ok: true, data, meta? }` envelope, or throws an ApiFailure. */
export async function getJson(path) {
  let response;
  try {
    response = await fetch(apiUrl(path), {
      headers: { Accept: 'application/json' },
      credentials: 'omit',
      signal: AbortSignal.timeout(15_000),
    });
  } catch {
    throw new ApiFailure(0, 'NETWORK');
  }
  let body = null;
  try {
    body = await response.json();
  } catch {
    // Not JSON (a proxy's error page, say): reported below like any other failure.
  }
  if (!response.ok || body?.ok !== true) {
    throw new ApiFailure(response.status, typeof body?.error?.code === 'string' ? body.error.code : 'UNKNOWN');
  }
  return body;
}

/** Creates an element; strings among `children` become text nodes, so they are never parsed as HTML. */
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'className') node.className = value;
    else if (name === 'text') node.textContent = value;
    else node.setAttribute(name, value === true ? '' : String(value));
  }
  node.append(...children.filter((child) => child !== undefined && child !== null));
  return node;
}

const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'long', timeZone: 'UTC' });

/** A `<time>` for an ISO date, or nothing when the issue has none. */
export function timeElement(iso) {
  if (!iso) return undefined;
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return undefined;
  return el('time', { datetime: iso }, dateFormat.format(date));
}

/** Only http(s) image URLs reach an <img src> (the service already guarantees it; this page does not rely on that). */
export function safeImageUrl(value) {
  try {
    const url = new URL(value);
    return url.protocol === 'https:' || url.protocol === 'http:' ? url.href : undefined;
  } catch {
    return undefined;
  }
}

/** Shows one of a page's states (loading, content, empty, missing, error) and hides the others. */
export function showState(states, name) {
  for (const [key, node] of Object.entries(states)) node.hidden = key !== name;
}

// The subscribe forms post wherever the one setting says; subscribe.js reads `action` when sent.
for (const form of document.querySelectorAll('form[data-newsletter-subscribe]')) {
  form.action = apiUrl('/api/subscribe');
}
