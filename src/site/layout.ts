import { escapeHtml } from './html.js';
import type { SitePaths } from './paths.js';

/** What every page of the site shares. */
export interface SiteIdentity {
  /** The publication's name. */
  title: string;
  /** One sentence about it (tagline, default meta description). */
  description: string;
  /** The service's origin (newsletter-bff), where the subscribe form posts. */
  apiUrl: string;
  paths: SitePaths;
}

export interface PageParts {
  /** The page's own head tags, after the shared ones. */
  head: string;
  main: string;
  /** The words of the skip link to `main`. */
  skipLinkLabel: string;
}

export const FEED_PATH = 'feed.xml';

/** A whole HTML document: shared head, header, the page's main column, the subscribe box, footer. */
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

/**
 * The subscribe form of examples/subscribe-form.html: a plain post to the service (which
 * answers with a 303 back to this page and #subscribed or #subscribe-error, shown by
 * :target without JavaScript), enhanced by subscribe.js when scripts run.
 */
function subscribeBox(site: SiteIdentity): string {
  const action = `${site.apiUrl.replace(/\/+$/, '')}/api/subscribe`;
  return `<aside class="subscribe-box" aria-labelledby="subscribe-title">
  <h2 id="subscribe-title">Get the next issue</h2>
  <p>New issues by email. No spam, and you can leave with one click.</p>
  <form class="subscribe-form" method="post" action="${escapeHtml(action)}" data-newsletter-subscribe>
    <label for="subscribe-email">Email address</label>
    <input id="subscribe-email" name="email" type="email" autocomplete="email" spellcheck="false" maxlength="254" required>
    <div class="subscribe-consent">
      <input id="subscribe-consent" name="optInAttestation" type="checkbox" value="true" required>
      <label for="subscribe-consent">Yes, email me each new issue of ${escapeHtml(site.title)}. I can unsubscribe at any time.</label>
    </div>
    <div hidden aria-hidden="true" style="position:absolute;left:-10000px;top:auto;width:1px;height:1px;overflow:hidden">
      <label for="subscribe-website">Leave this field empty</label>
      <input id="subscribe-website" name="website" type="text" tabindex="-1" autocomplete="off">
    </div>
    <button type="submit">Subscribe</button>
    <noscript>
      <p class="subscribe-result" id="subscribed">Thank you! You are subscribed. Look out for the next issue in your inbox.</p>
      <p class="subscribe-result" id="subscribe-error">Sorry, that did not work. Check the address and the consent box, then try again in a minute.</p>
    </noscript>
    <p class="subscribe-status" data-subscribe-status role="status" aria-live="polite" style="min-height:4.5em"></p>
  </form>
</aside>`;
}
