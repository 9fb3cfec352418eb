import { Hono, type Context, type MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { Config } from '../config.js';
import { ApiError } from '../errors.js';
import { maskEmail, type Logger } from '../log.js';
import { noopMetrics, type Metrics } from '../metrics.js';
import type { OriginPolicy } from '../origins.js';
import type { RateLimiter } from '../rate-limit.js';
import { forwardSubscription, type RecordOutcome } from '../subscribe/forward.js';
import { createRepeatGuard, enforceRateLimit, isForbiddenOrigin, isHoneypotFilled, type RepeatGuard } from '../subscribe/guards.js';
import { SUBSCRIBE_MAX_BODY_BYTES, parseSubscribeFields, readSubscribeBody, type SubscribeJsonInput } from '../subscribe/input.js';
import { redirectTarget, reply } from '../subscribe/reply.js';
import type { UpstreamClient } from '../upstream/newsletter-api.js';
import { UpstreamError } from '../upstream/transport.js';

export interface SubscribeRoutesOptions {
  upstream: UpstreamClient;
  config: Pick<
    Config,
    'subscribeSourceType' | 'subscribeDefaultSource' | 'subscribeRedirectUrl' | 'honeypotField'
  >;
  origins: OriginPolicy;
  rateLimiter: RateLimiter;
  /** Shared between instances (src/redis/) when configured; this process's memory otherwise. */
  repeatGuard?: RepeatGuard;
  clientIp: (c: Context) => string | undefined;
  now: () => number;
  log: Logger;
  metrics?: Pick<Metrics, 'subscribe'>;
}

// Type only: declares the JSON body to `hc`; the handler parses it (one schema for JSON and forms).
const declareJsonInput: MiddlewareHandler<{}, '/subscribe', { in: { json: SubscribeJsonInput }; out: {} }> = async function declareJsonInput(_c, next) {
  await next();
};

/**
 * POST /api/subscribe (docs/contract.md "POST /api/subscribe"). The checks run in this order:
 * origin, body size, then (in the handler) rate limit, media type, parsing, honeypot, the
 * repeat guard and the upstream. A honeypot hit and a repeat get the same reply as a success.
 */
export function createSubscribeRoutes(options: SubscribeRoutesOptions) {
  const { upstream, config, origins, rateLimiter, clientIp, now, log, metrics = noopMetrics } = options;
  const repeats = options.repeatGuard ?? createRepeatGuard(now);

  const recorder =
    (c: Context): RecordOutcome =>
    (outcome, fields = {}, level = outcome === 'failed' ? 'warn' : 'info') => {
      metrics.subscribe(outcome, fields.reason);
      log.log(level, 'subscribe', { outcome, requestId: c.get('requestId'), ...fields });
    };
  const targetOf = (c: Context) => redirectTarget(c, config.subscribeRedirectUrl, origins);

  return new Hono().post(
    '/subscribe',
    declareJsonInput,
    async function guardOrigin(c, next) {
      if (isForbiddenOrigin(c, origins)) {
        recorder(c)('rejected', { reason: 'FORBIDDEN_ORIGIN' });
        throw new ApiError('FORBIDDEN_ORIGIN');
      }
      await next();
    },
    bodyLimit({
      maxSize: SUBSCRIBE_MAX_BODY_BYTES,
      onError: (c) => {
        recorder(c)('rejected', { reason: 'PAYLOAD_TOO_LARGE' });
        return reply(c, targetOf(c), new ApiError('PAYLOAD_TOO_LARGE'));
      },
    }),
    async function subscribe(c) {
      const record = recorder(c);
      const target = targetOf(c);
      try {
        await enforceRateLimit(rateLimiter, clientIp(c));
        const input = await readSubscribeBody(c);
        if (isHoneypotFilled(input, config.honeypotField)) {
          // Answered exactly like a success, so a bot learns nothing; nothing goes upstream.
          record('honeypot');
          return reply(c, target);
        }
        const fields = parseSubscribeFields(c, input);
        if (await repeats.isRepeat(fields.normalized)) {
          record('deduped', { email: maskEmail(fields.email) });
          return reply(c, target);
        }
        const error = await forwardSubscription(upstream, config, fields, record, repeats.remember);
        if (error) throw error;
        return reply(c, target);
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        // Upstream failures were logged as 'failed' where they happened; the rest are ours.
        if (!(error.cause instanceof UpstreamError)) record('rejected', { reason: error.code });
        if (target) return reply(c, target, error);
        throw error;
      }
    },
  );
}
