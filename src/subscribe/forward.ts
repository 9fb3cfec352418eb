import type { Config } from '../config.js';
import type { ApiError } from '../errors.js';
import { maskEmail, type LogLevel } from '../log.js';
import type { UpstreamClient } from '../upstream/newsletter-api.js';
import { UpstreamError } from '../upstream/transport.js';
import type { CreateSubscriberBody } from '../upstream/schemas.js';
import { answerUpstreamFailure } from '../upstream-failures.js';
import type { SubscribeFields } from './input.js';

/** How a subscribe attempt ended, as its log line names it. */
export type SubscribeOutcome = 'forwarded' | 'deduped' | 'honeypot' | 'refused_by_upstream' | 'rejected' | 'failed';

/** Writes the one `subscribe` log line of an attempt. */
export type RecordOutcome = (outcome: SubscribeOutcome, fields?: Record<string, string | undefined>, level?: LogLevel) => void;

/**
 * Sends the subscription upstream. Resolves with `undefined` when the visitor gets the success
 * reply (created, or refused and answered alike: no enumeration), or with the error to answer;
 * either way the attempt has been logged. Only an address the upstream settled is remembered.
 */
export async function forwardSubscription(
  upstream: UpstreamClient,
  config: Pick<Config, 'subscribeSourceType' | 'subscribeDefaultSource'>,
  fields: SubscribeFields,
  record: RecordOutcome,
  remember: (normalizedEmail: string) => void | Promise<void>,
): Promise<ApiError | undefined> {
  const email = maskEmail(fields.email);
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
  } catch (failure) {
    if (!(failure instanceof UpstreamError)) throw failure;
    const { error, level, hint } = answerUpstreamFailure(failure, 'subscribe');
    if (!error) {
      await remember(fields.normalized);
      record('refused_by_upstream', { email, upstreamStatus: String(failure.status), upstreamCode: failure.upstreamCode, hint }, level);
      return undefined;
    }
    const { kind: upstreamKind, upstreamCode } = failure;
    // A hint means the status itself is the clue (a 404 on our path, a 401 for our key), so it is logged too.
    const logged = hint ? { email, upstreamKind, upstreamStatus: String(failure.status), upstreamCode, hint } : { email, upstreamKind, upstreamCode };
    record('failed', logged, level);
    return error;
  }
  await remember(fields.normalized);
  record('forwarded', { email });
  return undefined;
}
