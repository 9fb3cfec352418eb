import type { Config } from '../config/config.js';
import { maskEmail } from '../log.js';
import type { UpstreamClient } from '../upstream/newsletter-api.js';
import { UpstreamError } from '../upstream/transport.js';
import { answerUpstreamFailure } from '../upstream/failure-policy.js';
import { SubscribeFailure, type RecordOutcome } from './guards.js';
import type { parseSubscribeFields } from './input.js';

export async function forwardSubscription(
  upstream: UpstreamClient,
  config: Pick<Config, 'subscribeSourceType' | 'subscribeDefaultSource'>,
  fields: ReturnType<typeof parseSubscribeFields>,
  record: RecordOutcome,
  remember: (normalizedEmail: string) => void | Promise<void>,
): Promise<void> {
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
    await remember(fields.normalized);
    return record('refused_by_upstream', { email, upstreamStatus, upstreamCode, hint }, level);
  }
  await remember(fields.normalized);
  record('forwarded', { email });
}
