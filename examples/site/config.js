// The example site's one setting: where newsletter-bff answers, without a trailing slash.
// '' means this page's own origin (demo mode: `npm start` serves this site next to the API).
// On another origin, e.g. 'https://news-api.example.com': list this site's origin in the service's
// ALLOWED_ORIGINS, and allow the service's origin in this site's CSP `connect-src` and `form-action`.
window.NEWSLETTER_BFF_URL = '';
// Cloudflare Turnstile's site key when the service has TURNSTILE_SECRET_KEY set ('' for none): the
// subscribe form then shows the widget (subscribe.js adds it). In demo mode the service fills this
// in from TURNSTILE_SITE_KEY. Allow https://challenges.cloudflare.com in this site's CSP
// `script-src` and `frame-src`.
window.NEWSLETTER_TURNSTILE_SITE_KEY = '';
