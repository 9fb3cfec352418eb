import type { Config } from '../config/config.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import { sendWithin } from './guards.js';

const MINUTE_MS = 60_000;
const MAX_DISTINCT = 10_000;

export type SurgeCounter = { add(at: number): number | Promise<number>; rate(at: number): number | Promise<number> };

/** A sliding minute from two fixed ones (two counters however heavy the flood). */
export const slidingRate = (current: number, previous: number, at: number): number =>
  current + previous * (1 - (at % MINUTE_MS) / MINUTE_MS);
export const minuteOf = (at: number): number => Math.floor(at / MINUTE_MS);

function lastTwoMinutes<T>(empty: () => T): (at: number) => [current: T, previous: T] {
  let [minute, current, previous] = [0, empty(), empty()];
  return (at) => {
    const now = minuteOf(at);
    if (now !== minute) [minute, current, previous] = [now, empty(), now === minute + 1 ? current : empty()];
    return [current, previous];
  };
}

export function createMemorySurgeCounter(): SurgeCounter {
  const minutes = lastTwoMinutes(() => ({ attempts: 0 }));
  function count(at: number, added: number): number {
    const [current, previous] = minutes(at);
    current.attempts += added;
    return slidingRate(current.attempts, previous.attempts, at);
  }
  return { add: (at) => count(at, 1), rate: (at) => count(at, 0) };
}

/** Counts only, never an address. */
export type SurgeAlert = { text: string; event: string; at: string; [figure: string]: string | number };

const JSON_TYPE = { 'Content-Type': 'application/json' };

/** Slack-compatible; a failing receiver is logged, never waited on. The URL is a credential: never logged. */
export function createAlertWebhook({ url, log }: { url: string; log: Logger }) {
  return async function sendAlert(payload: SurgeAlert): Promise<void> {
    const post = async (signal: AbortSignal) => {
      const response = await fetch(url, { method: 'POST', headers: JSON_TYPE, body: JSON.stringify(payload), redirect: 'manual', signal });
      await response.body?.cancel();
      return response.ok ? undefined : { status: response.status };
    };
    const failed = await sendWithin<object | undefined>(5000, post, (reason) => ({ reason }));
    if (failed) log.log('warn', 'alert_webhook_failed', { alert: payload.event, ...failed });
  };
}

type Background = (promise: Promise<unknown>) => void;

const TOLD = {
  challenge: ['every subscribe now needs a Turnstile token', 'until the rate stays low'],
  pause: [
    'new addresses are paused',
    '(503) until the rate stays low; set TURNSTILE_SECRET_KEY and TURNSTILE_SITE_KEY to challenge instead',
  ],
};

/** docs/subscribe.md "Surges": per-IP limits never trip for a bot on rotating IPs, so attempts are also counted service-wide. */
export function createSurgeWatch(options: {
  config: Pick<Config, 'subscribeSurgePerMinute' | 'subscribeSurgeSeconds' | 'alertWebhookUrl'>;
  response: 'challenge' | 'pause';
  counter: SurgeCounter | undefined;
  now: () => number;
  log: Logger;
  metrics: Pick<Metrics, 'subscribeSurge'>;
}) {
  const { config, response, counter = createMemorySurgeCounter(), now, log, metrics } = options;
  const { subscribeSurgePerMinute: perMinute, subscribeSurgeSeconds: holdSeconds, alertWebhookUrl: url } = config;
  if (perMinute === 0) return undefined;
  const alert = url ? createAlertWebhook({ url, log }) : undefined;
  const [told, hint] = TOLD[response];
  let surge: { startedAt: number; lastAboveAt: number; attempts: number; challenged: number; paused: number } | undefined;
  const visitors = lastTwoMinutes(() => [new Set<string>(), new Set<string>(), new Set<string>()]);
  const distinct = (at: number, index: number) => new Set(visitors(at).flatMap((sets) => [...sets[index]!])).size;
  function tally(count: 'attempts' | 'challenged' | 'paused') {
    if (surge) surge[count] += 1;
  }

  function announce(started: boolean, at: number, text: string, figures: Record<string, string | number>, background: Background) {
    const event = started ? 'subscribe_surge_started' : 'subscribe_surge_ended';
    metrics.subscribeSurge(started);
    log.log('warn', event, started ? { ...figures, hint: `${told} ${hint}` } : figures);
    if (alert) background(alert({ text: `newsletter-bff: subscribe surge ${text}`, event, at: new Date(at).toISOString(), ...figures }));
  }

  function evaluate(rate: number, at: number, background: Background): void {
    if (rate > perMinute && surge) surge.lastAboveAt = at;
    else if (rate > perMinute) {
      surge = { startedAt: at, lastAboveAt: at, attempts: 0, challenged: 0, paused: 0 };
      const [ratePerMinute, distinctIps, distinctDomains] = [Math.round(rate), distinct(at, 0), distinct(at, 1)];
      const figures = { ratePerMinute, thresholdPerMinute: perMinute, distinctIps, distinctDomains, distinctAddresses: distinct(at, 2) };
      const text = `started, ${ratePerMinute} attempts a minute (threshold ${perMinute}) from ${distinctIps} IPs, ${distinctDomains} domains; ${told}.`;
      announce(true, at, text, { ...figures, response }, background);
    } else if (surge && at - surge.lastAboveAt >= holdSeconds * 1000) {
      const { startedAt, attempts, challenged, paused } = surge;
      const durationSeconds = Math.round((at - startedAt) / 1000);
      surge = undefined;
      const text = `ended after ${durationSeconds} s: ${attempts} attempts, ${challenged} challenged, ${paused} paused.`;
      announce(false, at, text, { durationSeconds, attempts, challenged, paused, response }, background);
    }
  }

  return {
    async attempt(ip: string | undefined, { domain, normalized }: { domain: string; normalized: string }, background: Background) {
      const at = now();
      const [seen] = visitors(at);
      [ip, domain, normalized].forEach((value, index) => {
        if (value !== undefined && seen[index]!.size < MAX_DISTINCT) seen[index]!.add(value);
      });
      evaluate(await counter.add(at), at, background);
      tally('attempts');
      return surge !== undefined;
    },
    tally,
    // Without an attempt, so a surge ends on time when the flood stops.
    async check(background: Background): Promise<void> {
      const at = now();
      if (surge) evaluate(await counter.rate(at), at, background);
    },
  };
}
