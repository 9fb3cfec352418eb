import type { Context } from 'hono';
import { SubscribeFailure } from './outcome.js';

export const TURNSTILE_RESPONSE_FIELD = 'cf-turnstile-response';
/** Error codes that mean our secret is wrong, not the visitor's token: an operator must act. */
const OUR_MISTAKES = new Set(['missing-input-secret', 'invalid-input-secret']);

/** Passes, or throws a SubscribeFailure (CAPTCHA_REQUIRED, CAPTCHA_FAILED or UPSTREAM_UNAVAILABLE). */
export type SubscribeChallenge = (c: Context, input: Record<string, unknown>) => Promise<void>;

export interface TurnstileChallengeOptions {
  secretKey: string;
  /** Sent with CAPTCHA_REQUIRED, so a form can show the widget it did not have. */
  siteKey?: string | undefined;
  verifyUrl: string;
  clientIp: (c: Context) => string | undefined;
  fetch?: typeof globalThis.fetch;
  /** A subscriber waits for this check: a slower verifier counts as down. */
  timeoutMs?: number;
}

const failed = (captcha: string) =>
  new SubscribeFailure('CAPTCHA_FAILED', { outcome: 'rejected', fields: { reason: 'CAPTCHA_FAILED', captcha } });

const unavailable = (captcha: string, level: 'warn' | 'error' = 'warn') =>
  new SubscribeFailure(
    'UPSTREAM_UNAVAILABLE',
    { outcome: 'failed', fields: { reason: 'CAPTCHA_UNAVAILABLE', captcha }, level },
    { message: 'The anti-bot check could not be completed. Try again later.', retryAfter: 5 },
  );

/**
 * Cloudflare Turnstile (or any siteverify-compatible verifier) on subscribe. A verifier that is
 * down or refuses our secret fails closed (503): an outage must not let a waiting bot through.
 */
export function createTurnstileChallenge(options: TurnstileChallengeOptions): SubscribeChallenge {
  const { secretKey, siteKey, verifyUrl, clientIp, fetch = globalThis.fetch, timeoutMs = 3000 } = options;

  async function siteverify(form: URLSearchParams): Promise<unknown> {
    try {
      const response = await fetch(verifyUrl, { method: 'POST', body: form, signal: AbortSignal.timeout(timeoutMs) });
      if (response.ok) return await response.json();
      await response.body?.cancel();
      return unavailable(`status ${response.status}`);
    } catch (error) {
      return unavailable(error instanceof Error && error.name === 'TimeoutError' ? 'timeout' : 'unreachable');
    }
  }

  return async function checkTurnstile(c, input) {
    const token = Object.hasOwn(input, TURNSTILE_RESPONSE_FIELD) ? input[TURNSTILE_RESPONSE_FIELD] : undefined;
    if (token === undefined || (typeof token === 'string' && token.trim() === '')) {
      // The form showed no widget (TURNSTILE_MODE=surge, an old form): the site key lets it render one.
      const detail = { path: TURNSTILE_RESPONSE_FIELD, message: 'is required: complete the anti-bot check', ...(siteKey && { siteKey }) };
      const log = { outcome: 'rejected', fields: { reason: 'CAPTCHA_REQUIRED', captcha: 'missing' } } as const;
      throw new SubscribeFailure('CAPTCHA_REQUIRED', log, { details: [detail] });
    }
    if (typeof token !== 'string' || token.length > 2048) throw failed('malformed');
    const remoteIp = clientIp(c);
    const answer = await siteverify(
      new URLSearchParams({ secret: secretKey, response: token, ...(remoteIp ? { remoteip: remoteIp } : {}) }),
    );
    if (answer instanceof SubscribeFailure) throw answer;
    const { success, 'error-codes': codes } = (answer ?? {}) as { success?: unknown; 'error-codes'?: unknown };
    if (success === true) return;
    if (codes === undefined && success === undefined) throw unavailable('not a siteverify answer');
    const list: unknown[] = Array.isArray(codes) ? codes : [];
    const errorCodes = list.filter((code) => typeof code === 'string').join(',');
    if (list.some((code) => OUR_MISTAKES.has(code as string))) throw unavailable(errorCodes, 'error');
    if (list.includes('internal-error')) throw unavailable(errorCodes);
    throw failed(errorCodes || 'rejected');
  };
}
