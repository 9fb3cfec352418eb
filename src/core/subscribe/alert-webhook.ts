import type { Logger } from '../log.js';
import type { SurgeAlert } from './surge.js';

/**
 * Sends a surge's start and end to ALERT_WEBHOOK_URL, a Slack-compatible webhook or any receiver of a
 * JSON POST (docs/subscribe.md "Alert webhook"). Always resolves: a failing receiver is logged, never
 * waited on by visitors. The URL is a credential: never logged.
 */
export function createAlertWebhook(options: {
  url: string;
  log: Logger;
  fetch?: typeof globalThis.fetch;
  timeoutMs?: number;
}): (payload: SurgeAlert) => Promise<void> {
  const { url, log, fetch = globalThis.fetch, timeoutMs = 5000 } = options;
  return async function sendAlert(payload) {
    try {
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(payload),
        redirect: 'manual',
        signal: AbortSignal.timeout(timeoutMs),
      });
      await response.body?.cancel();
      if (!response.ok) log.log('warn', 'alert_webhook_failed', { alert: payload.event, status: response.status });
    } catch (error) {
      const reason = error instanceof Error && error.name === 'TimeoutError' ? 'timeout' : 'unreachable';
      log.log('warn', 'alert_webhook_failed', { alert: payload.event, reason });
    }
  };
}
