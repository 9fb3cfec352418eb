import { Hono, type Context, type MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { Config } from '../config.js';
import { ApiError } from '../errors.js';
import { rateLimitKeyOf } from '../ip-address.js';
import { maskEmail, type Logger } from '../log.js';
import { noopMetrics, type Metrics } from '../metrics.js';
import type { OriginPolicy } from '../origins.js';
import type { RateLimiter } from '../rate-limit.js';
import { forwardSubscription, type RecordOutcome } from '../subscribe/forward.js';
import { createRepeatGuard, isForbiddenOrigin, isHoneypotFilled, rateLimitError, type RepeatGuard } from '../subscribe/guards.js';
import { SUBSCRIBE_MAX_BODY_BYTES, parseSubscribeFields, readSubscribeBody, type SubscribeJsonInput } from '../subscribe/input.js';
import { redirectTarget, reply } from '../subscribe/reply.js';
import type { UpstreamClient } from '../upstream/newsletter-api.js';
import { ChallengeFailure, type SubscribeChallenge } from '../subscribe/challenge.js';
import { UpstreamError } from '../upstream/transport.js';

export interface SubscribeRoutesOptions {
  upstream: UpstreamClient;
  config: Pick<
    Config,
    'subscribeSourceType' | 'subscribeDefaultSource' | 'subscribeRedirectUrl' | 'honeypotField' | 'rateLimitIpv6Prefix'
  >;
  origins: OriginPolicy;
  rateLimiter: RateLimiter;
  /** Shared between instances (src/redis/) when configured; this process's memory otherwise. */
  repeatGuard?: RepeatGuard;
  clientIp: (c: Context) => string | undefined;
  now: () => number;
  log: Logger;
  /** Turnstile's check (TURNSTILE_SECRET_KEY); none when no challenge is configured. */
  challenge?: SubscribeChallenge | undefined;
  metrics?: Pick<Metrics, 'subscribe'>;
}

// Type only: declares the JSON body to `hc`; the handler parses it (one schema for JSON and forms).
const declareJsonInput: MiddlewareHandler<{}, '/subscribe', { in: { json: SubscribeJsonInput }; out: {} }> = async function declareJsonInput(_c, next) {
  await next();
};

/**
 * POST /api/subscribe (docs/contract.md "POST /api/subscribe"). The checks run in this order:
 * origin and rate limit (before a byte of the body is read, whatever its transfer coding), body
 * size, then in the handler media type, parsing, honeypot, validation, the challenge (Turnstile,
 * when configured), the repeat guard and the upstream. A honeypot hit and a repeat get the same
 * reply as a success.
 */
export function createSubscribeRoutes(options: SubscribeRoutesOptions) {
  const { upstream, config, origins, rateLimiter, clientIp, now, log, challenge, metrics = noopMetrics } = options;
  const repeats = options.repeatGuard ?? createRepeatGuard(now);

  const recorder =
    (c: Context): RecordOutcome =>
    (outcome, fields = {}, level = outcome === 'failed' ? 'warn' : 'info') => {
      metrics.subscribe(outcome, fields.reason);
      log.log(level, 'subscribe', { outcome, requestId: c.get('requestId'), ...fields });
    };
  const targetOf = (c: Context) => redirectTarget(c, config.subscribeRedirectUrl, origins);
  /** Our own refusals: logged as rejected, then a 303 to a form's page or the JSON envelope. */
  const refuse = (c: Context, error: ApiError) => {
    recorder(c)('rejected', { reason: error.code });
    const target = targetOf(c);
    if (target) return reply(c, target, error);
    throw error;
  };

  return new Hono().post(
    '/subscribe',
    declareJsonInput,
    async function guardBeforeTheBody(c, next) {
      // A forbidden origin is never redirected: its Referer is not ours to send anyone back to.
      if (isForbiddenOrigin(c, origins)) {
        recorder(c)('rejected', { reason: 'FORBIDDEN_ORIGIN' });
        throw new ApiError('FORBIDDEN_ORIGIN');
      }
      const ip = clientIp(c);
      const limited = await rateLimitError(rateLimiter, ip === undefined ? undefined : rateLimitKeyOf(ip, config.rateLimitIpv6Prefix));
      if (limited) return refuse(c, limited);
      await next();
    },
    bodyLimit({
      maxSize: SUBSCRIBE_MAX_BODY_BYTES,
      onError: (c) => refuse(c, new ApiError('PAYLOAD_TOO_LARGE')),
    }),
    async function subscribe(c) {
      const record = recorder(c);
      try {
        const input = await readSubscribeBody(c);
        if (isHoneypotFilled(input, config.honeypotField)) {
          // Answered exactly like a success, so a bot learns nothing; nothing goes upstream.
          record('honeypot');
          return reply(c, targetOf(c));
        }
        const fields = parseSubscribeFields(c, input);
        // After validation, so a typo does not spend the visitor's one-use token.
        if (challenge) await challenge(c, input, record);
        if (await repeats.isRepeat(fields.normalized)) {
          record('deduped', { email: maskEmail(fields.email) });
          return reply(c, targetOf(c));
        }
        const error = await forwardSubscription(upstream, config, fields, record, repeats.remember);
        if (error) throw error;
        return reply(c, targetOf(c));
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        // Upstream and challenge failures were logged where they happened; the rest are ours.
        if (error.cause instanceof UpstreamError || error.cause instanceof ChallengeFailure) {
          const target = targetOf(c);
          if (target) return reply(c, target, error);
          throw error;
        }
        return refuse(c, error);
      }
    },
  );
}
