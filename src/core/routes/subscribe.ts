import { Hono, type Context, type MiddlewareHandler, type TypedResponse } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { Config } from '../config/config.js';
import { ApiError, type ErrorAnswer, type RouteErrorStatus, cutOffStatus, renderError, REQUEST_TIMEOUT } from '../http/errors.js';
import { waitUntilOf } from '../http/read-reply.js';
import { rateLimitKeyOf } from '../http/ip-address.js';
import { maskEmail, type Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import { parseHttpUrl, type OriginPolicy } from '../http/origins.js';
import { createMemoryRateLimiter, createRepeatGuard, isHoneypotFilled, type TurnstileChallengeOptions } from '../subscribe/guards.js';
import { createTurnstileChallenge, SubscribeFailure, type RateLimiter, type RecordOutcome, type RepeatGuard } from '../subscribe/guards.js';
import { isFormPost, SUBSCRIBE_MAX_BODY_BYTES, parseSubscribeFields, readSubscribeBody } from '../subscribe/input.js';
import type { SubscribeJsonInput } from '../subscribe/input.js';
import type { SubscribeBody } from '../public-shapes.js';
import { NO_STORE } from '../reads/cache-policies.js';
import { createSurgeWatch, type SurgeCounter } from '../subscribe/surge.js';
import type { UpstreamClient } from '../upstream/newsletter-api.js';
import { UpstreamError } from '../upstream/transport.js';
import { answerUpstreamFailure } from '../upstream/failure-policy.js';

export interface SubscribeDeps {
  rateLimiter?: RateLimiter | undefined;
  repeatGuard?: RepeatGuard | undefined;
  surgeCounter?: SurgeCounter | undefined;
  turnstile?: Pick<TurnstileChallengeOptions, 'fetch' | 'timeoutMs'> | undefined;
  isDisposableDomain?: ((domain: string) => boolean) | undefined;
}

// Declares the JSON body to `hc`; the handler parses it (one schema for JSON and forms).
type JsonInput = { in: { json: SubscribeJsonInput }; out: {} };

/** Guards in docs/contract.md's order (origin and rate limit before the body); each refusal is thrown, logged once by onError. */
export function createSubscribeRoutes(
  options: SubscribeDeps & {
    first: MiddlewareHandler;
    config: Config;
    upstream: UpstreamClient;
    origins: OriginPolicy;
    clientIp: (c: Context) => string | undefined;
    now: () => number;
    log: Logger;
    metrics: Metrics;
    requestTimedOut: (c: Context) => boolean;
  },
) {
  const { upstream, config, origins, clientIp, now, log, metrics, requestTimedOut, isDisposableDomain } = options;
  const rateLimiter = options.rateLimiter ?? createMemoryRateLimiter({ limit: config.subscribeRateLimitPerMinute, windowMs: 60_000, now });
  const repeats = options.repeatGuard ?? createRepeatGuard(now);
  const { turnstileSecretKey: secretKey, turnstileSiteKey: siteKey, turnstileVerifyUrl: verifyUrl } = config;
  const challenge = secretKey ? createTurnstileChallenge({ secretKey, siteKey, verifyUrl, clientIp, ...options.turnstile }) : undefined;
  const surge = createSurgeWatch({ config, response: challenge ? 'challenge' : 'pause', counter: options.surgeCounter, now, log, metrics });

  const record: RecordOutcome = (c, outcome, fields = {}, level = outcome === 'failed' ? 'warn' : 'info') => {
    metrics.subscribe(outcome, fields.reason);
    log.log(level, 'subscribe', { outcome, requestId: c.get('requestId'), ...fields });
  };
  const targetOf = (c: Context) => redirectTarget(c, config.subscribeRedirectUrl, origins, c.get('subscribeReturnTo'));
  const rateLimitKey = (c: Context) => {
    const ip = clientIp(c);
    return ip === undefined ? undefined : rateLimitKeyOf(ip, config.rateLimitIpv6Prefix);
  };

  async function forward(c: Context, fields: ReturnType<typeof parseSubscribeFields>): Promise<void> {
    const email = maskEmail(fields.email);
    try {
      // Built field by field: the client can never choose sourceType or add upstream fields.
      await upstream.createSubscriber({
        email: fields.email,
        optInAttestation: true,
        sourceType: config.subscribeSourceType,
        source: fields.source ?? config.subscribeDefaultSource,
        ...(fields.sourcePlatform ? { sourcePlatform: fields.sourcePlatform } : {}),
      });
    } catch (failure) {
      if (!(failure instanceof UpstreamError)) throw failure;
      const { error, level, hint } = answerUpstreamFailure(failure, 'subscribe');
      const { kind: upstreamKind, upstreamCode } = failure;
      const upstreamStatus = String(failure.status);
      if (error) {
        // With a hint the status is the clue (a 404 on our path, a 401 for our key), so it is logged too.
        const logged = hint ? { email, upstreamKind, upstreamStatus, upstreamCode, hint } : { email, upstreamKind, upstreamCode };
        const { code, message, details, retryAfter } = error;
        throw new SubscribeFailure(code, { outcome: 'failed', fields: logged, level }, { message, details, retryAfter, cause: failure });
      }
      await repeats.remember(fields.normalized);
      return record(c, 'refused_by_upstream', { email, upstreamStatus, upstreamCode, hint }, level);
    }
    await repeats.remember(fields.normalized);
    record(c, 'forwarded', { email });
  }

  const routes = new Hono()
    .post(
      '/subscribe',
      options.first as MiddlewareHandler<{}, '/subscribe', JsonInput>,
      async function guardBeforeTheBody(c, next) {
        // CORS does not stop a cross-site form post; this does. A request without `Origin` passes.
        const origin = c.req.header('origin');
        if (origin !== undefined && !origins.isAllowed(origin)) throw new ApiError('FORBIDDEN_ORIGIN');
        const limit = await rateLimiter.hit(rateLimitKey(c) ?? 'unknown');
        if (!limit.allowed) throw new ApiError('RATE_LIMITED', { retryAfter: limit.retryAfterSeconds });
        await next();
      },
      bodyLimit({ maxSize: SUBSCRIBE_MAX_BODY_BYTES, onError: () => Promise.reject(new ApiError('PAYLOAD_TOO_LARGE')) }),
      async function subscribe(c): Promise<SubscribeReply | ErrorAnswer<RouteErrorStatus<'/api/subscribe'>>> {
        const input = await readSubscribeBody(c);
        c.set('subscribeReturnTo', returnToPage(c, input, origins));
        if (isHoneypotFilled(input, config.honeypotField)) {
          // Answered like a success, so a bot learns nothing.
          record(c, 'honeypot');
          return reply(c, targetOf(c));
        }
        const fields = parseSubscribeFields(c, input);
        if (isDisposableDomain?.(fields.domain)) {
          throw new ApiError('VALIDATION_ERROR', { details: [{ path: 'email', message: 'must not be a disposable (throwaway) address' }] });
        }
        const surging = (await surge?.attempt(rateLimitKey(c), fields, waitUntilOf(c))) ?? false;
        // After validation, so a typo does not spend the one-use token.
        if (challenge && (config.turnstileMode === 'always' || surging)) {
          if (surging) surge?.tally('challenged');
          await challenge(c, input);
        }
        if (await repeats.isRepeat(fields.normalized)) {
          record(c, 'deduped', { email: maskEmail(fields.email) });
          return reply(c, targetOf(c));
        }
        if (surging && !challenge) {
          // No challenge to tell people from bots: a paused form costs less than a suspended list.
          surge?.tally('paused');
          throw new SubscribeFailure(
            'UPSTREAM_UNAVAILABLE',
            { outcome: 'paused', fields: { reason: 'SURGE' } },
            { message: 'Subscriptions are paused for a few minutes. Try again later.', retryAfter: config.subscribeSurgeSeconds },
          );
        }
        await forward(c, fields);
        return reply(c, targetOf(c));
      },
    )
    .onError(function answerRefusal(error, c) {
      // The body never arrived whole (499, or the listener's 408), whatever reading it threw; a SubscribeFailure came after.
      const cutOff = error instanceof SubscribeFailure ? undefined : cutOffStatus(c, requestTimedOut);
      if (cutOff === REQUEST_TIMEOUT) record(c, 'timed_out', { reason: 'REQUEST_TIMEOUT' });
      else if (cutOff !== undefined) record(c, 'abandoned', { reason: 'CLIENT_CLOSED_REQUEST' });
      if (cutOff !== undefined) return new Response(null, { status: cutOff });
      if (!(error instanceof ApiError)) throw error;
      if (error instanceof SubscribeFailure) record(c, error.log.outcome, { reason: error.code, ...error.log.fields }, error.log.level);
      else record(c, 'rejected', { reason: error.code });
      // FORBIDDEN_ORIGIN: that page is not ours to send anyone back to; a short page means more to a visitor than raw JSON.
      if (error.code === 'FORBIDDEN_ORIGIN' && isNoScriptPost(c) && !config.subscribeRedirectUrl) {
        return c.html(REFUSED_ORIGIN_PAGE, error.status, { 'Cache-Control': NO_STORE });
      }
      return reply(c, targetOf(c), error);
    });
  return { routes, surge };
}

type SubscribeReply = (Response & TypedResponse<SubscribeBody, 200, 'json'>) | (Response & TypedResponse<undefined, 303, 'redirect'>);

declare module 'hono' {
  interface ContextVariableMap {
    subscribeReturnTo: URL | undefined;
  }
}

const isNoScriptPost = (c: Context) => isFormPost(c) && !/\bapplication\/json\b/i.test(c.req.header('accept') ?? '');

/** Only on an allowed origin the post came from: never an open redirect (docs/contract.md). */
function returnToPage(c: Context, input: Record<string, unknown>, origins: OriginPolicy): URL | undefined {
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
