import type { Logger } from '../log.js';
import type { SurgeAlert } from './surge.js';

/**
 * Posts a surge's start and end as JSON to ALERT_WEBHOOK_URL (Slack-compatible; docs/subscribe.md "Alert webhook").
 * Always resolves: a failing receiver is logged, never waited on by visitors. The URL is a credential: never logged.
 */
export function createAlertWebhook(options: { url: string; log: Logger; fetch?: typeof globalThis.fetch; timeoutMs?: number }) {
  const { url, log, fetch = globalThis.fetch, timeoutMs = 5000 } = options;
  return async function sendAlert(payload: SurgeAlert): Promise<void> {
    const headers = { 'Content-Type': 'application/json' };
    const failed = (detail: { status: number } | { reason: string }) =>
      log.log('warn', 'alert_webhook_failed', { alert: payload.event, ...detail });
    try {
      const response = await fetch(url, {
        method: 'POST',
        headers,
        body: JSON.stringify(payload),
        redirect: 'manual',
        signal: AbortSignal.timeout(timeoutMs),
      });
      await response.body?.cancel();
      if (!response.ok) failed({ status: response.status });
    } catch (error) {
      failed({ reason: error instanceof Error && error.name === 'TimeoutError' ? 'timeout' : 'unreachable' });
    }
  };
}
