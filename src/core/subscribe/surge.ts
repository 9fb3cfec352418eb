import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';

const MINUTE_MS = 60_000;
/** Distinct IPs, domains and addresses kept per minute for the start line; past this, "at least". */
const MAX_DISTINCT = 10_000;

/**
 * Subscribe attempts per minute, counted service-wide: in this process's memory, or in Redis for
 * every instance (src/node/redis/surge-counter.ts). The rate is a sliding minute estimated from two
 * fixed ones (the previous minute weighted by how much of it the sliding minute still covers),
 * which costs two counters however heavy the flood.
 */
export interface SurgeCounter {
  /** Counts one attempt at `at` and returns the attempts of the minute up to it. */
  add(at: number): number | Promise<number>;
  /** The attempts of the minute up to `at`, counting none. */
  rate(at: number): number | Promise<number>;
}

/** The sliding-minute estimate from the fixed minute `at` falls in and the one before. */
export function slidingRate(current: number, previous: number, at: number): number {
  const covered = 1 - (at % MINUTE_MS) / MINUTE_MS;
  return current + previous * covered;
}

/** The minute `at` falls in, as a number (the fixed windows' key). */
export function minuteOf(at: number): number {
  return Math.floor(at / MINUTE_MS);
}

/** The counter of one process (Workers: one isolate). */
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

/** What the owner's webhook receives (docs/subscribe.md "Alert webhook"): counts only, never an address. */
export type SurgeAlert =
  | {
      text: string;
      event: 'subscribe_surge_started';
      at: string;
      ratePerMinute: number;
      thresholdPerMinute: number;
      distinctIps: number;
      distinctDomains: number;
      distinctAddresses: number;
      response: SurgeResponse;
    }
  | {
      text: string;
      event: 'subscribe_surge_ended';
      at: string;
      durationSeconds: number;
      attempts: number;
      challenged: number;
      paused: number;
      response: SurgeResponse;
    };

/** What the service does with attempts during a surge: ask for a Turnstile token, or pause new addresses. */
export type SurgeResponse = 'challenge' | 'pause';

/** One counted attempt: who (the rate-limit key of its IP) and which mailbox. */
export interface SurgeAttempt {
  ip: string | undefined;
  domain: string;
  mailbox: string;
}

export interface SurgeWatchOptions {
  /** SUBSCRIBE_SURGE_PER_MINUTE: a surge starts above it. */
  perMinute: number;
  /** SUBSCRIBE_SURGE_SECONDS: a surge ends once the rate has stayed at or below the threshold this long. */
  holdSeconds: number;
  response: SurgeResponse;
  counter: SurgeCounter;
  now: () => number;
  log: Logger;
  metrics: Pick<Metrics, 'subscribeSurge'>;
  /** ALERT_WEBHOOK_URL's sender; resolves whatever happens (alert-webhook.ts). */
  alert?: ((payload: SurgeAlert) => Promise<void>) | undefined;
}

/** Keeps a background promise alive (Workers' waitUntil); on Node it simply runs. */
export type Background = (promise: Promise<unknown>) => void;

export interface SurgeWatch {
  /** Counts an attempt that passed validation, honeypot and origin; true while a surge is on. */
  attempt(attempt: SurgeAttempt, background: Background): Promise<boolean>;
  /** An attempt during a surge had to pass the challenge, or was paused (the end line counts them). */
  challenged(): void;
  paused(): void;
  /** Looks at the rate without an attempt, so a surge ends on time when the flood stops (Node runs it on a timer). */
  check(background: Background): Promise<void>;
  active(): boolean;
  /** Seconds a paused visitor is asked to wait: the hold, the shortest a surge can still last. */
  retryAfterSeconds(): number;
}

/**
 * Surge detection for subscribe (docs/subscribe.md "Surges"): per-IP and per-address limits never
 * trip when a bot posts thousands of distinct addresses from rotating IPs, so attempts are also
 * counted for the whole service. Above the threshold a surge starts; it ends once the rate has
 * stayed at or below it for the hold. The owner is told once at each end: a `warn` line, the
 * gauge, and the webhook when one is set.
 */
export function createSurgeWatch(options: SurgeWatchOptions): SurgeWatch {
  const { perMinute, holdSeconds, response, counter, now, log, metrics, alert } = options;
  let surge: { startedAt: number; lastAboveAt: number; attempts: number; challenged: number; paused: number } | undefined;
  // The last two minutes' distinct visitors, for the start line: this instance's view.
  let seen = { minute: 0, ips: new Set<string>(), domains: new Set<string>(), mailboxes: new Set<string>() };
  let before = seen;

  function remember(attempt: SurgeAttempt, at: number): void {
    const minute = minuteOf(at);
    if (minute !== seen.minute) {
      before = minute === seen.minute + 1 ? seen : { minute: 0, ips: new Set(), domains: new Set(), mailboxes: new Set() };
      seen = { minute, ips: new Set(), domains: new Set(), mailboxes: new Set() };
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
    const ended = surge!;
    surge = undefined;
    const figures = {
      durationSeconds: Math.round((at - ended.startedAt) / 1000),
      attempts: ended.attempts,
      challenged: ended.challenged,
      paused: ended.paused,
      response,
    };
    metrics.subscribeSurge(false);
    log.log('warn', 'subscribe_surge_ended', figures);
    const text =
      `newsletter-bff: subscribe surge ended after ${figures.durationSeconds} s: ${figures.attempts} attempts, ` +
      `${figures.challenged} challenged, ${figures.paused} paused.`;
    if (alert) background(alert({ text, event: 'subscribe_surge_ended', at: new Date(at).toISOString(), ...figures }));
  }

  return {
    async attempt(attempt, background) {
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
    async check(background) {
      if (!surge) return;
      const at = now();
      evaluate(await counter.rate(at), at, background);
    },
    active: () => surge !== undefined,
    retryAfterSeconds: () => holdSeconds,
  };
}
