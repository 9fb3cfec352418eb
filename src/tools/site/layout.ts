import { escapeHtml } from './html.js';
import type { SitePaths } from './paths.js';

export interface SiteIdentity {
  title: string;
  description: string;
  /** Already pointed at the service (`subscribeFormFrom`). */
  subscribeForm: string;
  paths: SitePaths;
}

export interface PageParts {
  /** After the shared head tags. */
  head: string;
  main: string;
  skipLinkLabel: string;
}

export const FEED_PATH = 'feed.xml';

export function renderPage(site: SiteIdentity, parts: PageParts): string {
  const { paths } = site;
  const title = escapeHtml(site.title);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<!-- The no-JavaScript subscribe path redirects back to the Referer: keep it sent even if the host says no-referrer. -->
<meta name="referrer" content="strict-origin-when-cross-origin">
${parts.head}
<link rel="alternate" type="application/atom+xml" title="${title}" href="${escapeHtml(paths.href(FEED_PATH))}">
<link rel="icon" href="${escapeHtml(paths.href('favicon.svg'))}" type="image/svg+xml">
<link rel="stylesheet" href="${escapeHtml(paths.href('style.css'))}">
<script src="${escapeHtml(paths.href('subscribe.js'))}" defer></script>
</head>
<body>
<a class="skip-link" href="#main">${escapeHtml(parts.skipLinkLabel)}</a>
<header class="site-header">
  <div class="wrap">
    <a class="brand" href="${escapeHtml(paths.href(''))}">${title}</a>
    <p class="tagline">${escapeHtml(site.description)}</p>
  </div>
</header>
<main id="main" class="wrap layout">
${parts.main}
${subscribeBox(site)}
</main>
<footer class="site-footer">
  <div class="wrap">
    <p><a href="${escapeHtml(paths.href(''))}">Archive</a> · <a href="${escapeHtml(paths.href(FEED_PATH))}">Atom feed</a></p>
  </div>
</footer>
</body>
</html>
`;
}

// The snippet's placeholders: its service address and its name for the publication.
const SNIPPET_SERVICE = 'https://newsletter-bff.example.com';
const SNIPPET_NAME = 'of the newsletter.';

/** examples/subscribe-form.html's form, pointed at the service and named for the publication. */
export function subscribeFormFrom(snippet: string, apiUrl: string, title: string): string {
  const form = /<form[\s\S]*<\/form>/.exec(snippet)?.[0];
  if (!form?.includes(SNIPPET_SERVICE)) throw new Error('the subscribe form snippet has no <form> posting to its placeholder address');
  return form.replaceAll(SNIPPET_SERVICE, escapeHtml(apiUrl.replace(/\/+$/, ''))).replace(SNIPPET_NAME, `of ${escapeHtml(title)}.`);
}

function subscribeBox(site: SiteIdentity): string {
  return `<aside class="subscribe-box" aria-labelledby="subscribe-title">
  <h2 id="subscribe-title">Get the next issue</h2>
  <p>New issues by email. No spam, and you can leave with one click.</p>
${site.subscribeForm}
</aside>`;
}
