import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { createPrometheusMetrics } from '../../src/node/admin/prometheus.js';
import { closeServer, TEST_API_KEY } from '../helpers.js';
import { createSubscribeApp, postJson } from './support.js';

// docs/subscribe.md "The owner is told": /metrics and the alert webhook during a surge (Node only:
// prom-client, and a loopback receiver).

const THRESHOLD = 5;
const HOLD_SECONDS = 120;
const SURGE_ENV = {
  SUBSCRIBE_SURGE_PER_MINUTE: String(THRESHOLD),
  SUBSCRIBE_SURGE_SECONDS: String(HOLD_SECONDS),
  SUBSCRIBE_RATE_LIMIT_PER_MINUTE: '10000',
};

const subscription = (n: number) => ({ email: `person${n}@domain${n % 3}.example`, optInAttestation: true });

async function postMany(app: Parameters<typeof postJson>[0], from: number, count: number) {
  const statuses: number[] = [];
  for (let n = from; n < from + count; n += 1) statuses.push((await postJson(app, subscription(n))).status);
  return statuses;
}

describe('/metrics during a surge', () => {
  it('sets the gauge and counts the surge and its paused attempts in /metrics', async () => {
    const prometheus = createPrometheusMetrics();
    const { app, clock } = createSubscribeApp({ env: SURGE_ENV, metrics: prometheus.metrics });
    await postMany(app, 0, THRESHOLD + 3);
    const during = await prometheus.registry.metrics();
    expect(during).toMatch(/^newsletter_bff_subscribe_surge 1$/m);
    expect(during).toMatch(/^newsletter_bff_subscribe_surges_total 1$/m);
    expect(during).toMatch(/^newsletter_bff_subscribe_attempts_total\{outcome="paused"\} 3$/m);
    clock.advance(HOLD_SECONDS * 1000);
    await postJson(app, subscription(900));
    expect(await prometheus.registry.metrics()).toMatch(/^newsletter_bff_subscribe_surge 0$/m);
  });
});

describe('the alert webhook (ALERT_WEBHOOK_URL)', () => {
  const servers: Server[] = [];
  const held: ServerResponse[] = [];
  afterEach(async () => {
    for (const response of held.splice(0)) response.destroy();
    for (const server of servers.splice(0)) await closeServer(server);
  });

  /** A loopback receiver: `answer` says how it treats each alert; `received` resolves with the bodies as they come. */
  async function startReceiver(answer: 'ok' | 'fail' | 'hold') {
    const bodies: Record<string, unknown>[] = [];
    const raw: string[] = [];
    let notify: (() => void) | undefined;
    const server = createServer((req: IncomingMessage, res: ServerResponse) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        raw.push(`${req.method} ${req.headers['content-type']} ${body}`);
        bodies.push(JSON.parse(body) as Record<string, unknown>);
        notify?.();
        if (answer === 'hold') held.push(res);
        else res.writeHead(answer === 'ok' ? 200 : 500).end('ok');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    servers.push(server);
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/hook/T000-fake`;
    /** Resolves once `count` alerts have arrived (bounded by the test's timeout). */
    const received = (count: number) =>
      new Promise<Record<string, unknown>[]>((resolve) => {
        const check = () => bodies.length >= count && resolve(bodies);
        notify = check;
        check();
      });
    return { url, received, raw };
  }

  it('posts a Slack-compatible start and end with counts only: no address, no key, no webhook URL in the log', async () => {
    const receiver = await startReceiver('ok');
    const { app, clock, logs } = createSubscribeApp({ env: { ...SURGE_ENV, ALERT_WEBHOOK_URL: receiver.url } });
    await postMany(app, 0, THRESHOLD + 2);
    const [start] = await receiver.received(1);
    expect(start).toEqual({
      text: expect.stringMatching(/^newsletter-bff: subscribe surge started, 6 attempts a minute \(threshold 5\)/),
      event: 'subscribe_surge_started',
      at: expect.any(String),
      ratePerMinute: THRESHOLD + 1,
      thresholdPerMinute: THRESHOLD,
      distinctIps: 1,
      distinctDomains: 3,
      distinctAddresses: THRESHOLD + 1,
      response: 'pause',
    });
    clock.advance(HOLD_SECONDS * 1000);
    await postJson(app, subscription(99));
    const [, end] = await receiver.received(2);
    expect(end).toMatchObject({ event: 'subscribe_surge_ended', text: expect.stringContaining('ended'), paused: 2 });
    const everything = receiver.raw.join('\n') + logs.lines.join('\n');
    expect(receiver.raw[0]).toMatch(/^POST application\/json /);
    expect(everything).not.toContain(TEST_API_KEY);
    expect(everything).not.toMatch(/person\d+@/);
    expect(logs.lines.join('\n')).not.toContain('T000-fake');
  });

  it('answers visitors at once while the receiver holds the alert unanswered', async () => {
    const receiver = await startReceiver('hold');
    const { app, calls, logs } = createSubscribeApp({ env: { ...SURGE_ENV, ALERT_WEBHOOK_URL: receiver.url } });
    // The surge starts on the 6th post; its alert is held by the receiver while these are answered.
    expect(await postMany(app, 0, THRESHOLD + 3)).toEqual([...Array(THRESHOLD).fill(200), 503, 503, 503]);
    await receiver.received(1);
    // Still pending (the sender gives up after 5 s): had a visitor waited for it, this would be a failure line.
    expect(logs.entries().filter((line) => line.event === 'alert_webhook_failed')).toEqual([]);
    expect(calls).toHaveLength(THRESHOLD);
  });

  it('answers visitors as usual when the receiver fails, with one warn line for the alert', async () => {
    const receiver = await startReceiver('fail');
    const { app, calls, logs } = createSubscribeApp({ env: { ...SURGE_ENV, ALERT_WEBHOOK_URL: receiver.url } });
    expect(await postMany(app, 0, THRESHOLD + 3)).toEqual([...Array(THRESHOLD).fill(200), 503, 503, 503]);
    await receiver.received(1);
    expect(calls).toHaveLength(THRESHOLD);
    await expect
      .poll(() => logs.entries().filter((line) => line.event === 'alert_webhook_failed'))
      .toEqual([expect.objectContaining({ level: 'warn', alert: 'subscribe_surge_started', status: 500 })]);
  });
});
