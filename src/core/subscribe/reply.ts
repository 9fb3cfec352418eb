import type { Context, TypedResponse } from 'hono';
import { renderError, type ApiError } from '../http/errors.js';
import { parseHttpUrl, type OriginPolicy } from '../http/origins.js';
import type { SubscribeBody } from '../public-shapes.js';
import { isFormPost } from './input.js';
import { NO_STORE } from '../reads/cache-policies.js';

export type SubscribeReply =
  | (Response & TypedResponse<SubscribeBody, 200, 'json'>)
  | (Response & TypedResponse<undefined, 303, 'redirect'>);

declare module 'hono' {
  interface ContextVariableMap {
    subscribeReturnTo: URL | undefined;
  }
}

const isNoScriptPost = (c: Context) => isFormPost(c) && !/\bapplication\/json\b/i.test(c.req.header('accept') ?? '');

/** Only on an allowed origin the post came from: never an open redirect (docs/contract.md). */
export function returnToPage(c: Context, input: Record<string, unknown>, origins: OriginPolicy): URL | undefined {
  const value = isNoScriptPost(c) && Object.hasOwn(input, 'returnTo') ? input.returnTo : undefined;
  if (typeof value !== 'string' || value.length > 2048) return undefined;
  const page = parseHttpUrl(value.trim());
  if (!page || page.username || page.password || !origins.isAllowed(page.origin)) return undefined;
  const origin = c.req.header('origin');
  const sender = origin !== undefined && origin !== 'null' ? origin : parseHttpUrl(c.req.header('referer'))?.origin;
  // With ALLOWED_ORIGINS=* a post that names no origin of its own cannot use it.
  if (sender === undefined ? origins.anyOrigin : sender !== page.origin) return undefined;
  page.hash = '';
  return page;
}

export function redirectTarget(c: Context, redirectUrl: string | undefined, origins: OriginPolicy, returnTo?: URL): URL | undefined {
  if (!isNoScriptPost(c)) return undefined;
  if (redirectUrl || returnTo) return new URL(redirectUrl || returnTo!);
  const referer = parseHttpUrl(c.req.header('referer'));
  return referer && origins.isAllowed(referer.origin) ? referer : undefined;
}

export function reply(c: Context, target: URL | undefined): SubscribeReply;
export function reply(c: Context, target: URL | undefined, error?: ApiError): Response;
export function reply(c: Context, target: URL | undefined, error?: ApiError): Response {
  c.header('Cache-Control', NO_STORE);
  if (!target) return error ? renderError(c, error) : c.json({ ok: true as const, data: { accepted: true as const } }, 200);
  for (const stale of ['subscribed', 'subscribe_error']) target.searchParams.delete(stale);
  if (error) target.searchParams.set('subscribe_error', error.code);
  else target.searchParams.set('subscribed', '1');
  // A page without JavaScript cannot read the query, but CSS can show `:target`; the redirect URL's own fragment is kept.
  if (!target.hash) target.hash = !error ? 'subscribed' : error.code === 'CAPTCHA_REQUIRED' ? 'subscribe-challenge' : 'subscribe-error';
  return c.redirect(target.href, 303);
}

/** FORBIDDEN_ORIGIN: that page is not ours to send anyone back to; a short page means more to a visitor than raw JSON. */
export function refusedOriginReply(c: Context, redirectUrl: string | undefined, error: ApiError): Response {
  if (!isNoScriptPost(c)) return reply(c, undefined, error);
  if (redirectUrl) return reply(c, new URL(redirectUrl), error);
  return c.html(REFUSED_ORIGIN_PAGE, error.status, { 'Cache-Control': NO_STORE });
}

// No style or script: the API's Content-Security-Policy (default-src 'none') covers this page too.
const REFUSED_ORIGIN_PAGE = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="robots" content="noindex">
<title>Subscription not sent</title></head>
<body><main>
<h1>Subscription not sent</h1>
<p>This newsletter does not take sign-ups from the page you came from, so nothing was sent and your address was not kept.</p>
<p>Please go back and subscribe with the form on the newsletter's own website.</p>
<p><small>Site owner: this service's <code>ALLOWED_ORIGINS</code> setting does not list the origin of the page the form is on.</small></p>
</main></body>
</html>
`;
