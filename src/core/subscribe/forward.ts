import type { Config } from '../config/config.js';
import { maskEmail } from '../log.js';
import type { UpstreamClient } from '../upstream/newsletter-api.js';
import { UpstreamError } from '../upstream/transport.js';
import type { CreateSubscriberBody } from '../upstream/schemas.js';
import { answerUpstreamFailure } from '../upstream/failure-policy.js';
import type { SubscribeFields } from './input.js';
import { SubscribeFailure, type RecordOutcome } from './outcome.js';

/**
 * Sends the subscription upstream. Resolves when the visitor gets the success reply (created, or
 * refused and answered alike); throws a SubscribeFailure. Only an address the upstream settled is remembered.
 */
export async function forwardSubscription(
  upstream: UpstreamClient,
  config: Pick<Config, 'subscribeSourceType' | 'subscribeDefaultSource'>,
  fields: SubscribeFields,
  record: RecordOutcome,
  remember: (normalizedEmail: string) => void | Promise<void>,
): Promise<void> {
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
      return;
    }
    const { kind: upstreamKind, upstreamCode } = failure;
    // With a hint the status is the clue (a 404 on our path, a 401 for our key), so it is logged too.
    const logged = hint
      ? { email, upstreamKind, upstreamStatus: String(failure.status), upstreamCode, hint }
      : { email, upstreamKind, upstreamCode };
    throw new SubscribeFailure(
      error.code,
      { outcome: 'failed', fields: logged, level },
      { message: error.message, details: error.details, retryAfter: error.retryAfter, cause: failure },
    );
  }
  await remember(fields.normalized);
  record('forwarded', { email });
}
