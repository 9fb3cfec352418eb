import { createTransport, type TransportOptions } from '../../src/core/upstream/transport.js';
import * as z from '../../src/core/zod.js';
import { jsonResponse, TEST_API_KEY, type FetchHandler } from '../helpers.js';
import { createTestSeams } from './fixtures.js';

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
 * The real transport over the test seams (fixtures.ts), sending the fake key the way an API
 * client would, so every leak check has a key to look for.
 */
export function setupTransport(handler: FetchHandler, overrides: Partial<TransportOptions> & { readsCodes?: boolean } = {}) {
  const { readsCodes = true, ...options } = overrides;
  const { options: seams, ...recorded } = createTestSeams(handler);
  const request = createTransport({
    ...seams,
    headers: { Authorization: `Bearer ${TEST_API_KEY}` },
    // Told how to read an error code, as an API's client tells it; `readsCodes: false` leaves it plain.
    ...(readsCodes ? { errorCodeOf, notFoundCode: 'NOT_FOUND' } : {}),
    ...options,
  });
  const transport = {
    get: async () => (await request({ method: 'GET', url: THING_URL, schema: Answer })).data,
    post: async (body: unknown) => (await request({ method: 'POST', url: THING_URL, schema: Answer, body })).data,
  };
  return { transport, ...recorded };
}
