import type { Metrics } from '../src/core/metrics.js';

/** A `Metrics` that writes each call down as `method(args…)`, for asserting what a hook reported. */
export function createMetricsRecorder() {
  const events: unknown[][] = [];
  const record =
    (name: keyof Metrics) =>
    (...args: unknown[]) => {
      events.push([name, ...args]);
    };
  const metrics: Metrics = {
    request: record('request'),
    cacheRead: record('cacheRead'),
    staleAnswer: record('staleAnswer'),
    cacheEviction: record('cacheEviction'),
    upstreamCall: record('upstreamCall'),
    upstreamRetry: record('upstreamRetry'),
    upstreamHoldOff: record('upstreamHoldOff'),
    subscribe: record('subscribe'),
    subscribeSurge: record('subscribeSurge'),
    connectionShed: record('connectionShed'),
  };
  /** The calls of one method, without its name. */
  const of = (name: keyof Metrics) => events.filter((event) => event[0] === name).map((event) => event.slice(1));
  return { metrics, events, of };
}
