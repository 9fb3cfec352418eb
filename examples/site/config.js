// The example site's one setting: where newsletter-bff answers, without a trailing slash.
// '' means this page's own origin (demo mode: `npm start` serves this site next to the API).
// On another origin, e.g. 'https://news-api.example.com': list this site's origin in the service's
// ALLOWED_ORIGINS, and allow the service's origin in this site's CSP `connect-src` and `form-action`.
window.NEWSLETTER_BFF_URL = '';
