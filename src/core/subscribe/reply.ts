import type { Context, TypedResponse } from 'hono';
import { renderError, type ApiError } from '../http/errors.js';
import { parseHttpUrl, type OriginPolicy } from '../http/origins.js';
import type { SubscribeBody } from '../public-shapes.js';
import { isFormPost } from './input.js';

/** Fragments of a form post's redirect: ids a page can show with `:target`, no script needed. */
export const NO_SCRIPT_ANCHORS = { success: 'subscribed', error: 'subscribe-error', challenge: 'subscribe-challenge' } as const;

/** A JSON caller's 200 or a form post's 303 (other errors are thrown and rendered by onError). */
export type SubscribeReply =
  | (Response & TypedResponse<SubscribeBody, 200, 'json'>)
  | (Response & TypedResponse<undefined, 303, 'redirect'>);

declare module 'hono' {
  interface ContextVariableMap {
    /** The page a form post's `returnTo` field names, once accepted (see `returnToPage`). */
    subscribeReturnTo: URL | undefined;
  }
}

/** The form field naming the page a post without JavaScript returns to (docs/contract.md "POST /api/subscribe"). */
export const RETURN_TO_FIELD = 'returnTo';
/** Longer than any page address a site has; a longer value is ignored, not truncated. */
const RETURN_TO_MAX_LENGTH = 2048;

/** A post without JavaScript: a form body that does not ask for JSON. It can be answered with a 303 or a page. */
export function isNoScriptPost(c: Context): boolean {
  return isFormPost(c) && !/\bapplication\/json\b/i.test(c.req.header('accept') ?? '');
}

/**
 * The page a form post's `returnTo` field names, when the visitor may be sent back there: an
 * absolute http(s) URL on an allowed origin, and on the origin the post came from (its `Origin`,
 * else its `Referer`), so a page can name a page of its own site and never another host; with
 * `ALLOWED_ORIGINS=*` a post that names no origin of its own cannot use it. Its fragment is
 * dropped (the answer's own marks the outcome). Anything else is ignored: the post is answered
 * as if the field were absent, so this is never an open redirect.
 */
export function returnToPage(c: Context, input: Record<string, unknown>, origins: OriginPolicy): URL | undefined {
  if (!isNoScriptPost(c) || !Object.hasOwn(input, RETURN_TO_FIELD)) return undefined;
  const value = input[RETURN_TO_FIELD];
  if (typeof value !== 'string' || value.length > RETURN_TO_MAX_LENGTH) return undefined;
  const page = parseHttpUrl(value.trim());
  if (!page || page.username || page.password || !origins.isAllowed(page.origin)) return undefined;
  const origin = c.req.header('origin');
  const sender = origin !== undefined && origin !== 'null' ? origin : parseHttpUrl(c.req.header('referer'))?.origin;
  if (sender === undefined ? origins.anyOrigin : sender !== page.origin) return undefined;
  page.hash = '';
  return page;
}

/**
 * Where an HTML form post (no JavaScript) is sent back with a 303 instead of JSON: the
 * configured redirect URL, else the page its `returnTo` field named (`returnToPage`), else the
 * page the form came from (its `Referer`) when its origin is allowed. Only allowed origins,
 * so this cannot become an open redirect.
 */
export function redirectTarget(c: Context, redirectUrl: string | undefined, origins: OriginPolicy, returnTo?: URL): URL | undefined {
  if (!isNoScriptPost(c)) return undefined;
  if (redirectUrl) return new URL(redirectUrl);
  if (returnTo) return new URL(returnTo);
  const referer = c.req.header('referer');
  const refererOrigin = parseHttpUrl(referer)?.origin;
  if (referer && refererOrigin && origins.isAllowed(refererOrigin)) return new URL(referer);
  return undefined;
}

/** The one success (200 JSON or 303), or an error as a 303 to a form's page or as the JSON envelope. */
export function reply(c: Context, target: URL | undefined): SubscribeReply;
export function reply(c: Context, target: URL | undefined, error: ApiError): Response;
export function reply(c: Context, target: URL | undefined, error?: ApiError): Response;
export function reply(c: Context, target: URL | undefined, error?: ApiError): Response {
  c.header('Cache-Control', 'no-store');
  if (target) {
    target.searchParams.delete('subscribed');
    target.searchParams.delete('subscribe_error');
    if (error) target.searchParams.set('subscribe_error', error.code);
    else target.searchParams.set('subscribed', '1');
    // A page without JavaScript cannot read the query; CSS can show `:target` (the example
    // site's <noscript> messages). A fragment the configured redirect URL has is kept.
    // CAPTCHA_REQUIRED has its own: the page says that the check needs JavaScript.
    if (!target.hash) {
      target.hash = !error
        ? NO_SCRIPT_ANCHORS.success
        : error.code === 'CAPTCHA_REQUIRED'
          ? NO_SCRIPT_ANCHORS.challenge
          : NO_SCRIPT_ANCHORS.error;
    }
    return c.redirect(target.href, 303);
  }
  if (error) return renderError(c, error);
  return c.json({ ok: true as const, data: { accepted: true as const } }, 200);
}

/**
 * A post refused for its origin (403 FORBIDDEN_ORIGIN). Its page is not ours to send anyone back
 * to, so a visitor without JavaScript goes to the configured redirect URL with
 * `?subscribe_error=FORBIDDEN_ORIGIN`, or, without one, gets a short page saying what happened
 * (raw JSON would mean nothing to them). A JSON caller gets the envelope.
 */
export function refusedOriginReply(c: Context, redirectUrl: string | undefined, error: ApiError): Response {
  if (!isNoScriptPost(c)) return reply(c, undefined, error);
  if (redirectUrl) return reply(c, new URL(redirectUrl), error);
  return c.html(REFUSED_ORIGIN_PAGE, error.status, { 'Cache-Control': 'no-store' });
}

// No style or script: the API's Content-Security-Policy (default-src 'none') covers this page too.
const REFUSED_ORIGIN_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>Subscription not sent</title>
</head>
<body>
<main>
<h1>Subscription not sent</h1>
<p>This newsletter does not take sign-ups from the page you came from, so nothing was sent and your address was not kept.</p>
<p>Please go back and subscribe with the form on the newsletter's own website.</p>
<p><small>Site owner: this service's <code>ALLOWED_ORIGINS</code> setting does not list the origin of the page the form is on.</small></p>
</main>
</body>
</html>
`;
