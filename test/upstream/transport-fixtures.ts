import { createTransport, type TransportOptions } from '../../src/upstream/transport.js';
import { z } from '../../src/zod.js';
import { createFakeClock, createScriptedFetch, jsonResponse, TEST_API_KEY, type FetchHandler } from '../helpers.js';

/** Any API's URL: the transport knows no paths of its own. */
export const THING_URL = new URL('https://api.test/v2/things');
/** A body to POST. */
export const THING = { name: 'a thing' };

/** A success body the tests' transport accepts: an envelope around a list of things with ids. */
const Answer = z.object({ ok: z.literal(true), data: z.array(z.object({ id: z.string() })) });

/** A success answer with one thing. */
export const thingsOk = () => jsonResponse({ ok: true, data: [{ id: 'thing_1' }] });

/** Reads `error.code` out of an error body, as an API's client would tell the transport to. */
function errorCodeOf(body: unknown): string | undefined {
  const code = (body as { error?: { code?: unknown } } | null)?.error?.code;
  return typeof code === 'string' ? code : undefined;
}

/**
 * The real transport over a scripted fetch, a fake clock and sleeps that only record their delay,
 * sending the fake key the way an API client would, so every leak check has a key to look for.
 */
export function setupTransport(handler: FetchHandler, overrides: Partial<TransportOptions> = {}) {
  const clock = createFakeClock();
  const sleeps: number[] = [];
  const scripted = createScriptedFetch(handler);
  const request = createTransport({
    timeoutMs: 5000,
    fetch: scripted.fetch,
    random: () => 0.5,
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    now: clock.now,
    headers: { Authorization: `Bearer ${TEST_API_KEY}` },
    errorCodeOf,
    notFoundCode: 'NOT_FOUND',
    ...overrides,
  });
  const transport = {
    get: async () => (await request({ method: 'GET', url: THING_URL, schema: Answer })).data,
    post: async (body: unknown) => (await request({ method: 'POST', url: THING_URL, schema: Answer, body })).data,
  };
  return { transport, calls: scripted.calls, sleeps, clock };
}
