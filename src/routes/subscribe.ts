import { Hono, type Context, type MiddlewareHandler, type TypedResponse } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { LRUCache } from 'lru-cache';
import * as z from 'zod/mini';
import type { Config } from '../config.js';
import { ApiError, apiErrorFromUpstream, renderError, type ErrorResponse } from '../errors.js';
import { maskEmail, type Logger, type LogLevel } from '../log.js';
import { originOf, type OriginPolicy } from '../origins.js';
import type { RateLimiter } from '../rate-limit.js';
import type { SubscribeBody } from '../shape.js';
import { NOT_FOUND_STATUS } from '../upstream/assumptions.js';
import type { UpstreamClient } from '../upstream/newsletter-api.js';
import { SOURCE_PLATFORMS, type CreateSubscriberBody } from '../upstream/schemas.js';
import { UpstreamError } from '../upstream/transport.js';
import { parseOrThrow, preprocess } from '../validation.js';

export interface SubscribeRoutesOptions {
  upstream: UpstreamClient;
  config: Pick<
    Config,
    'subscribeSourceType' | 'subscribeDefaultSource' | 'subscribeRedirectUrl' | 'honeypotField'
  >;
  origins: OriginPolicy;
  rateLimiter: RateLimiter;
  clientIp: (c: Context) => string | undefined;
  now: () => number;
  log: Logger;
}

/** "A few KB" (PRODUCT.md): an email, a source label and a checkbox fit many times over. */
export const SUBSCRIBE_MAX_BODY_BYTES = 8 * 1024;
/** The same address again within this window is accepted without a second upstream call. */
export const REPEAT_WINDOW_MS = 10 * 60 * 1000;
const REPEAT_MAX_ENTRIES = 50_000;

const FORM_TYPES = new Set(['application/x-www-form-urlencoded', 'multipart/form-data']);
const ACCEPTED_TYPES = new Set(['application/json', ...FORM_TYPES]);
const SUBSCRIBE_FIELDS = ['email', 'optInAttestation', 'source', 'sourcePlatform'] as const;
// `\p{Cc}`: C0/C1 control characters (CR, LF, NUL, …) never belong in these fields.
const NO_CONTROL_CHARACTERS = /^\P{Cc}*$/u;

const trimmed = (value: unknown) => (typeof value === 'string' ? value.trim() : value);
const blankToUndefined = (value: unknown) => {
  const text = trimmed(value);
  return text === '' ? undefined : text;
};

/**
 * The subscribe schema, one for JSON and form input. Only the attestation differs by source:
 * JSON must send `true`; a form checkbox sends `on` (or its value attribute) when ticked.
 */
export function createSubscribeInputSchema(checkedValues: readonly string[]) {
  return z.object({
    email: preprocess(
      trimmed,
      z.pipe(
        z
          .string({ error: 'is required' })
          .check(
            z.minLength(1, { error: 'is required' }),
            z.maxLength(254, { error: 'must be at most 254 characters' }),
            z.regex(NO_CONTROL_CHARACTERS, { error: 'must not contain control characters' }),
          ),
        z.email({ error: 'must be a valid email address' }),
      ),
    ),
    optInAttestation: preprocess(
      (value) => (typeof value === 'string' && checkedValues.includes(value.trim().toLowerCase()) ? true : value),
      z.literal(true, { error: 'must be true: the subscriber must confirm they opted in' }),
    ),
    source: preprocess(
      blankToUndefined,
      z.optional(
        z
          .string({ error: 'must be text' })
          .check(
            z.maxLength(160, { error: 'must be at most 160 characters' }),
            z.regex(NO_CONTROL_CHARACTERS, { error: 'must not contain control characters' }),
          ),
      ),
    ),
    sourcePlatform: preprocess(
      blankToUndefined,
      z.optional(z.enum(SOURCE_PLATFORMS, { error: `must be one of ${SOURCE_PLATFORMS.join(', ')}` })),
    ),
  });
}

const JsonInputSchema = createSubscribeInputSchema([]);
const FormInputSchema = createSubscribeInputSchema(['true', 'on', '1', 'yes']);

/** The JSON body `hc<AppType>` sends (HTML forms post the same fields as text). */
export interface SubscribeJsonInput {
  email: string;
  optInAttestation: true;
  source?: string;
  sourcePlatform?: (typeof SOURCE_PLATFORMS)[number];
}

/** Fragments of a form post's redirect: ids a page can show with `:target`, no script needed. */
export const NO_SCRIPT_ANCHORS = { success: 'subscribed', error: 'subscribe-error' } as const;

/** A JSON caller's 200 or a form post's 303 (other errors are thrown and rendered by onError). */
type SubscribeReply = (Response & TypedResponse<SubscribeBody, 200, 'json'>) | (Response & TypedResponse<undefined, 303, 'redirect'>);

// Type only: declares the JSON body to `hc`; the handler parses it (one schema for JSON and forms).
const declareJsonInput: MiddlewareHandler<{}, '/subscribe', { in: { json: SubscribeJsonInput }; out: {} }> = async function declareJsonInput(_c, next) {
  await next();
};

type Outcome = 'forwarded' | 'deduped' | 'honeypot' | 'refused_by_upstream' | 'rejected' | 'failed';

/** POST /api/subscribe (PRODUCT.md "POST /api/subscribe"). */
export function createSubscribeRoutes(options: SubscribeRoutesOptions) {
  const { upstream, config, origins, rateLimiter, clientIp, now, log } = options;
  const recentlySubscribed = new LRUCache<string, true>({
    max: REPEAT_MAX_ENTRIES,
    ttl: REPEAT_WINDOW_MS,
    perf: { now },
    ttlResolution: 0,
  });

  function ownOrigin(c: Context): string {
    return new URL(c.req.url).origin;
  }

  /** An HTML form post (no JavaScript) gets a 303 back to a page instead of JSON. */
  function redirectTarget(c: Context): URL | undefined {
    const mediaType = mediaTypeOf(c);
    const accept = c.req.header('accept') ?? '';
    if (!mediaType || !FORM_TYPES.has(mediaType) || /\bapplication\/json\b/i.test(accept)) return undefined;
    if (config.subscribeRedirectUrl) return new URL(config.subscribeRedirectUrl);
    // Only the page the form came from, and only when its origin is allowed: no `next` or
    // `returnTo` parameter is read, so this cannot become an open redirect.
    const referer = c.req.header('referer');
    const refererOrigin = originOf(referer);
    if (referer && refererOrigin && origins.isAllowed(refererOrigin, ownOrigin(c))) return new URL(referer);
    return undefined;
  }

  function reply(c: Context, target: URL | undefined, error?: ApiError): SubscribeReply | ErrorResponse {
    if (target) {
      target.searchParams.delete('subscribed');
      target.searchParams.delete('subscribe_error');
      if (error) target.searchParams.set('subscribe_error', error.code);
      else target.searchParams.set('subscribed', '1');
      // A page without JavaScript cannot read the query; CSS can show `:target` (the example
      // site's <noscript> messages). A fragment the configured redirect URL has is kept.
      if (!target.hash) target.hash = error ? NO_SCRIPT_ANCHORS.error : NO_SCRIPT_ANCHORS.success;
      return c.body(null, 303, { Location: target.href, 'Cache-Control': 'no-store' }) as Response as SubscribeReply;
    }
    if (error) return renderError(c, error);
    return c.json({ ok: true as const, data: { accepted: true as const } }, 200, { 'Cache-Control': 'no-store' });
  }

  function record(
    c: Context,
    outcome: Outcome,
    fields: Record<string, string | undefined> = {},
    level: LogLevel = outcome === 'failed' ? 'warn' : 'info',
  ) {
    log.log(level, 'subscribe', {
      outcome,
      requestId: c.get('requestId'),
      ...fields,
    });
  }

  async function handle(c: Context, target: URL | undefined): Promise<SubscribeReply | ErrorResponse> {
    const limit = await rateLimiter.hit(clientIp(c) ?? 'unknown');
    if (!limit.allowed) throw new ApiError('RATE_LIMITED', { retryAfter: limit.retryAfterSeconds });
    const mediaType = mediaTypeOf(c);
    if (!mediaType || !ACCEPTED_TYPES.has(mediaType)) throw new ApiError('UNSUPPORTED_MEDIA_TYPE');

    const input = mediaType === 'application/json' ? await readJsonObject(c) : await readForm(c);
    const honeypot = Object.hasOwn(input, config.honeypotField) ? input[config.honeypotField] : undefined;
    if (honeypot !== undefined && !(typeof honeypot === 'string' && honeypot.trim() === '')) {
      // Answered exactly like a success, so a bot learns nothing; nothing goes upstream.
      record(c, 'honeypot');
      return reply(c, target);
    }

    // Own properties of the four known fields only: `__proto__` and unknown fields are dropped.
    const picked: Record<string, unknown> = Object.create(null);
    for (const field of SUBSCRIBE_FIELDS) if (Object.hasOwn(input, field)) picked[field] = input[field];
    const fields = parseOrThrow(mediaType === 'application/json' ? JsonInputSchema : FormInputSchema, picked);
    const normalized = fields.email.toLowerCase();
    const masked = maskEmail(fields.email);

    if (recentlySubscribed.has(normalized)) {
      record(c, 'deduped', { email: masked });
      return reply(c, target);
    }

    // Built field by field: the client can never choose sourceType or add upstream fields.
    const body: CreateSubscriberBody = {
      email: fields.email,
      optInAttestation: true,
      sourceType: config.subscribeSourceType,
      source: fields.source ?? config.subscribeDefaultSource,
    };
    if (fields.sourcePlatform) body.sourcePlatform = fields.sourcePlatform;

    try {
      await upstream.createSubscriber(body);
    } catch (error) {
      if (!(error instanceof UpstreamError)) throw error;
      if (error.status === NOT_FOUND_STATUS) {
        // Our POST path is fixed, so a 404 means this deployment points at the wrong place, not
        // that this address was refused: every address gets it alike, so answering it as an
        // error reveals nothing about the address. Not remembered: the next attempt goes upstream.
        const hint = 'Create Subscriber answered 404: NEWSLETTER_API_BASE_URL may be wrong (it must be the service root ending in /v1)';
        record(c, 'failed', { email: masked, upstreamKind: error.kind, upstreamStatus: '404', upstreamCode: error.upstreamCode, hint }, 'error');
        throw new ApiError('UPSTREAM_ERROR', { cause: error });
      }
      if (error.kind === 'refused' || error.kind === 'not_found') {
        // Blocked, bounced or otherwise refused for its status (any other 4xx, whatever its code):
        // the same reply as a new address, so the form cannot be used to learn who is on the list.
        recentlySubscribed.set(normalized, true);
        record(c, 'refused_by_upstream', { email: masked, upstreamStatus: String(error.status), upstreamCode: error.upstreamCode });
        return reply(c, target);
      }
      record(c, 'failed', { email: masked, upstreamKind: error.kind, upstreamCode: error.upstreamCode });
      throw apiErrorFromUpstream(error, 'write');
    }
    recentlySubscribed.set(normalized, true);
    record(c, 'forwarded', { email: masked });
    return reply(c, target);
  }

  return new Hono().post(
    '/subscribe',
    declareJsonInput,
    async function guardOrigin(c, next) {
      // CORS does not stop a simple cross-site form post; this does, for JSON and forms alike.
      const origin = c.req.header('origin');
      if (origin !== undefined && !origins.isAllowed(origin, ownOrigin(c))) {
        record(c, 'rejected', { reason: 'FORBIDDEN_ORIGIN' });
        throw new ApiError('FORBIDDEN_ORIGIN');
      }
      await next();
    },
    bodyLimit({
      maxSize: SUBSCRIBE_MAX_BODY_BYTES,
      onError: (c) => {
        record(c, 'rejected', { reason: 'PAYLOAD_TOO_LARGE' });
        return reply(c, redirectTarget(c), new ApiError('PAYLOAD_TOO_LARGE'));
      },
    }),
    async function subscribe(c) {
      const target = redirectTarget(c);
      try {
        return await handle(c, target);
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        // Upstream failures were logged as 'failed' where they happened; the rest are ours.
        if (!(error.cause instanceof UpstreamError)) record(c, 'rejected', { reason: error.code });
        if (target) return reply(c, target, error);
        throw error;
      }
    },
  );
}

function mediaTypeOf(c: Context): string | undefined {
  return c.req.header('content-type')?.split(';')[0]?.trim().toLowerCase() || undefined;
}

async function readJsonObject(c: Context): Promise<Record<string, unknown>> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(await c.req.text());
  } catch {
    throw new ApiError('VALIDATION_ERROR', { details: [{ path: '(body)', message: 'must be valid JSON' }] });
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new ApiError('VALIDATION_ERROR', { details: [{ path: '(body)', message: 'must be a JSON object' }] });
  }
  return parsed as Record<string, unknown>;
}

async function readForm(c: Context): Promise<Record<string, unknown>> {
  try {
    return await c.req.parseBody();
  } catch {
    throw new ApiError('VALIDATION_ERROR', { details: [{ path: '(body)', message: 'must be a valid form submission' }] });
  }
}
