import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';

const MINUTE_MS = 60_000;
/** Distinct IPs, domains and addresses kept per minute for the start line; past this, "at least". */
const MAX_DISTINCT = 10_000;

/**
 * Subscribe attempts per minute, service-wide (in memory, or in Redis for every instance): a
 * sliding minute estimated from two fixed ones, so two counters however heavy the flood.
 */
export interface SurgeCounter {
  /** Counts one attempt and returns the rate. */
  add(at: number): number | Promise<number>;
  rate(at: number): number | Promise<number>;
}

/** The previous fixed minute weighted by how much of it the sliding minute still covers. */
export function slidingRate(current: number, previous: number, at: number): number {
  const covered = 1 - (at % MINUTE_MS) / MINUTE_MS;
  return current + previous * covered;
}

export function minuteOf(at: number): number {
  return Math.floor(at / MINUTE_MS);
}

export function createMemorySurgeCounter(): SurgeCounter {
  let minute = 0;
  let current = 0;
  let previous = 0;
  function roll(at: number): void {
    const now = minuteOf(at);
    if (now === minute) return;
    previous = now === minute + 1 ? current : 0;
    current = 0;
    minute = now;
  }
  return {
    add(at) {
      roll(at);
      current += 1;
      return slidingRate(current, previous, at);
    },
    rate(at) {
      roll(at);
      return slidingRate(current, previous, at);
    },
  };
}

type Counts<Name extends string> = Record<Name, number> & { response: SurgeResponse };

/** What the owner's webhook receives (docs/subscribe.md "Alert webhook"): counts only, never an address. */
export type SurgeAlert = { text: string; at: string } & (
  | ({ event: 'subscribe_surge_started' } & Counts<
      'ratePerMinute' | 'thresholdPerMinute' | 'distinctIps' | 'distinctDomains' | 'distinctAddresses'
    >)
  | ({ event: 'subscribe_surge_ended' } & Counts<'durationSeconds' | 'attempts' | 'challenged' | 'paused'>)
);

/** During a surge: ask for a Turnstile token, or pause new addresses. */
export type SurgeResponse = 'challenge' | 'pause';

/** `ip`: the rate-limit key of its address. */
export interface SurgeAttempt {
  ip: string | undefined;
  domain: string;
  mailbox: string;
}

export interface SurgeWatchOptions {
  /** SUBSCRIBE_SURGE_PER_MINUTE. */
  perMinute: number;
  /** SUBSCRIBE_SURGE_SECONDS: how long the rate must stay low for a surge to end. */
  holdSeconds: number;
  response: SurgeResponse;
  counter: SurgeCounter;
  now: () => number;
  log: Logger;
  metrics: Pick<Metrics, 'subscribeSurge'>;
  alert?: ((payload: SurgeAlert) => Promise<void>) | undefined;
}

/** Workers' waitUntil; on Node the promise simply runs. */
export type Background = (promise: Promise<unknown>) => void;

/**
 * docs/subscribe.md "Surges": per-IP and per-address limits never trip for a bot posting distinct
 * addresses from rotating IPs, so attempts are also counted for the whole service.
 */
export function createSurgeWatch(options: SurgeWatchOptions) {
  const { perMinute, holdSeconds, response, counter, now, log, metrics, alert } = options;
  let surge: { startedAt: number; lastAboveAt: number; attempts: number; challenged: number; paused: number } | undefined;
  // The last two minutes' distinct visitors, as this instance saw them.
  const emptyWindow = (minute: number) => ({ minute, ips: new Set<string>(), domains: new Set<string>(), mailboxes: new Set<string>() });
  let seen = emptyWindow(0);
  let before = seen;

  function remember(attempt: SurgeAttempt, at: number): void {
    const minute = minuteOf(at);
    if (minute !== seen.minute) {
      before = minute === seen.minute + 1 ? seen : emptyWindow(0);
      seen = emptyWindow(minute);
    }
    const add = (set: Set<string>, value: string | undefined) => {
      if (value !== undefined && set.size < MAX_DISTINCT) set.add(value);
    };
    add(seen.ips, attempt.ip);
    add(seen.domains, attempt.domain);
    add(seen.mailboxes, attempt.mailbox);
  }

  const distinct = (pick: (window: typeof seen) => Set<string>) => new Set([...pick(before), ...pick(seen)]).size;

  function evaluate(rate: number, at: number, background: Background): void {
    if (rate > perMinute) {
      if (surge) surge.lastAboveAt = at;
      else start(rate, at, background);
    } else if (surge && at - surge.lastAboveAt >= holdSeconds * 1000) {
      end(at, background);
    }
  }

  function start(rate: number, at: number, background: Background): void {
    surge = { startedAt: at, lastAboveAt: at, attempts: 0, challenged: 0, paused: 0 };
    const figures = {
      ratePerMinute: Math.round(rate),
      thresholdPerMinute: perMinute,
      distinctIps: distinct((window) => window.ips),
      distinctDomains: distinct((window) => window.domains),
      distinctAddresses: distinct((window) => window.mailboxes),
      response,
    };
    metrics.subscribeSurge(true);
    log.log('warn', 'subscribe_surge_started', {
      ...figures,
      hint:
        response === 'challenge'
          ? 'every subscribe now needs a Turnstile token until the rate stays low'
          : 'new addresses are paused (503) until the rate stays low; set TURNSTILE_SECRET_KEY and TURNSTILE_SITE_KEY to challenge instead',
    });
    const text =
      `newsletter-bff: subscribe surge started, ${figures.ratePerMinute} attempts a minute (threshold ${perMinute}) ` +
      `from ${figures.distinctIps} IPs, ${figures.distinctDomains} domains; ` +
      (response === 'challenge' ? 'every subscribe now needs a Turnstile token.' : 'new addresses are paused.');
    if (alert) background(alert({ text, event: 'subscribe_surge_started', at: new Date(at).toISOString(), ...figures }));
  }

  function end(at: number, background: Background): void {
    const { startedAt, attempts, challenged, paused } = surge!;
    surge = undefined;
    const figures = { durationSeconds: Math.round((at - startedAt) / 1000), attempts, challenged, paused, response };
    metrics.subscribeSurge(false);
    log.log('warn', 'subscribe_surge_ended', figures);
    const text =
      `newsletter-bff: subscribe surge ended after ${figures.durationSeconds} s: ${figures.attempts} attempts, ` +
      `${figures.challenged} challenged, ${figures.paused} paused.`;
    if (alert) background(alert({ text, event: 'subscribe_surge_ended', at: new Date(at).toISOString(), ...figures }));
  }

  return {
    /** Counts an attempt that passed validation, honeypot and origin; true while a surge is on. */
    async attempt(attempt: SurgeAttempt, background: Background): Promise<boolean> {
      const at = now();
      remember(attempt, at);
      evaluate(await counter.add(at), at, background);
      if (surge) surge.attempts += 1;
      return surge !== undefined;
    },
    challenged() {
      if (surge) surge.challenged += 1;
    },
    paused() {
      if (surge) surge.paused += 1;
    },
    /** Looks at the rate without an attempt, so a surge ends on time when the flood stops. */
    async check(background: Background): Promise<void> {
      if (!surge) return;
      const at = now();
      evaluate(await counter.rate(at), at, background);
    },
    active: () => surge !== undefined,
    /** The hold: the shortest a surge can still last. */
    retryAfterSeconds: () => holdSeconds,
  };
}

export type SurgeWatch = ReturnType<typeof createSurgeWatch>;
