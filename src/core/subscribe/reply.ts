import type { Context, TypedResponse } from 'hono';
import { renderError, type ApiError, type ErrorResponse } from '../http/errors.js';
import { parseHttpUrl, type OriginPolicy } from '../http/origins.js';
import type { SubscribeBody } from '../public-shapes.js';
import { isFormPost } from './input.js';
import { NO_STORE } from '../reads/cache-policies.js';

/** Fragments of a form post's redirect: ids a page can show with `:target`, no script needed. */
export const NO_SCRIPT_ANCHORS = { success: 'subscribed', error: 'subscribe-error', challenge: 'subscribe-challenge' } as const;

/** A JSON caller's 200 or a form post's 303 (other errors are thrown and rendered by onError). */
export type SubscribeReply =
  | (Response & TypedResponse<SubscribeBody, 200, 'json'>)
  | (Response & TypedResponse<undefined, 303, 'redirect'>);

/**
 * Where an HTML form post (no JavaScript) is sent back with a 303 instead of JSON: the
 * configured redirect URL, else the page the form came from when its origin is allowed.
 * No `next` or `returnTo` parameter is read, so this cannot become an open redirect.
 */
export function redirectTarget(c: Context, redirectUrl: string | undefined, origins: OriginPolicy): URL | undefined {
  if (!isFormPost(c) || /\bapplication\/json\b/i.test(c.req.header('accept') ?? '')) return undefined;
  if (redirectUrl) return new URL(redirectUrl);
  const referer = c.req.header('referer');
  const refererOrigin = parseHttpUrl(referer)?.origin;
  if (referer && refererOrigin && origins.isAllowed(refererOrigin)) return new URL(referer);
  return undefined;
}

/** The one success (200 JSON or 303), or an error as a 303 to a form's page or as the JSON envelope. */
export function reply(c: Context, target: URL | undefined, error?: ApiError): SubscribeReply | ErrorResponse {
  c.header('Cache-Control', NO_STORE);
  if (target) {
    target.searchParams.delete('subscribed');
    target.searchParams.delete('subscribe_error');
    if (error) target.searchParams.set('subscribe_error', error.code);
    else target.searchParams.set('subscribed', '1');
    // A page without JavaScript cannot read the query; CSS can show `:target` (the example
    // site's <noscript> messages). A fragment the configured redirect URL has is kept.
    // CAPTCHA_REQUIRED has its own: the page says that the check needs JavaScript.
    if (!target.hash) {
      target.hash = !error ? NO_SCRIPT_ANCHORS.success : error.code === 'CAPTCHA_REQUIRED' ? NO_SCRIPT_ANCHORS.challenge : NO_SCRIPT_ANCHORS.error;
    }
    return c.redirect(target.href, 303);
  }
  if (error) return renderError(c, error);
  return c.json({ ok: true as const, data: { accepted: true as const } }, 200);
}
