import type { Context } from 'hono';
import { SubscribeFailure } from './outcome.js';

export const TURNSTILE_RESPONSE_FIELD = 'cf-turnstile-response';
const MAX_TOKEN_LENGTH = 2048;
/** A subscriber waits for this check: a slower verifier counts as down. */
const DEFAULT_VERIFY_TIMEOUT_MS = 3000;
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
  timeoutMs?: number;
}

type Verdict = { passed: true } | { passed: false; errorCodes: string } | { unavailable: string; level: 'warn' | 'error' };

/**
 * Cloudflare Turnstile (or any siteverify-compatible verifier) on subscribe. A verifier that is
 * down or refuses our secret fails closed (503): an outage must not let a waiting bot through.
 */
export function createTurnstileChallenge(options: TurnstileChallengeOptions): SubscribeChallenge {
  const { secretKey, siteKey, verifyUrl, clientIp, fetch = globalThis.fetch, timeoutMs = DEFAULT_VERIFY_TIMEOUT_MS } = options;

  async function verify(token: string, remoteIp: string | undefined): Promise<Verdict> {
    const form = new URLSearchParams({ secret: secretKey, response: token });
    if (remoteIp) form.set('remoteip', remoteIp);
    let answer: unknown;
    try {
      const response = await fetch(verifyUrl, { method: 'POST', body: form, signal: AbortSignal.timeout(timeoutMs) });
      if (!response.ok) {
        await response.body?.cancel();
        return { unavailable: `status ${response.status}`, level: 'warn' };
      }
      answer = await response.json();
    } catch (error) {
      return { unavailable: error instanceof Error && error.name === 'TimeoutError' ? 'timeout' : 'unreachable', level: 'warn' };
    }
    const { success, 'error-codes': codes } = (answer ?? {}) as { success?: unknown; 'error-codes'?: unknown };
    if (success === true) return { passed: true };
    const errorCodes = Array.isArray(codes) ? codes.filter((code) => typeof code === 'string').join(',') : '';
    if (codes === undefined && success === undefined) return { unavailable: 'not a siteverify answer', level: 'warn' };
    if (Array.isArray(codes) && codes.some((code) => OUR_MISTAKES.has(code))) return { unavailable: errorCodes, level: 'error' };
    if (Array.isArray(codes) && codes.includes('internal-error')) return { unavailable: errorCodes, level: 'warn' };
    return { passed: false, errorCodes };
  }

  return async function checkTurnstile(c, input) {
    const token = Object.hasOwn(input, TURNSTILE_RESPONSE_FIELD) ? input[TURNSTILE_RESPONSE_FIELD] : undefined;
    if (token === undefined || (typeof token === 'string' && token.trim() === '')) {
      // The form showed no widget (TURNSTILE_MODE=surge, an old form): the site key lets it render one.
      const detail = { path: TURNSTILE_RESPONSE_FIELD, message: 'is required: complete the anti-bot check' };
      throw new SubscribeFailure(
        'CAPTCHA_REQUIRED',
        { outcome: 'rejected', fields: { reason: 'CAPTCHA_REQUIRED', captcha: 'missing' } },
        { details: [siteKey ? { ...detail, siteKey } : detail] },
      );
    }
    if (typeof token !== 'string' || token.length > MAX_TOKEN_LENGTH) {
      throw new SubscribeFailure('CAPTCHA_FAILED', { outcome: 'rejected', fields: { reason: 'CAPTCHA_FAILED', captcha: 'malformed' } });
    }
    const verdict = await verify(token, clientIp(c));
    if ('unavailable' in verdict) {
      throw new SubscribeFailure(
        'UPSTREAM_UNAVAILABLE',
        { outcome: 'failed', fields: { reason: 'CAPTCHA_UNAVAILABLE', captcha: verdict.unavailable }, level: verdict.level },
        { message: 'The anti-bot check could not be completed. Try again later.', retryAfter: 5 },
      );
    }
    if (!verdict.passed) {
      throw new SubscribeFailure('CAPTCHA_FAILED', {
        outcome: 'rejected',
        fields: { reason: 'CAPTCHA_FAILED', captcha: verdict.errorCodes || 'rejected' },
      });
    }
  };
}
