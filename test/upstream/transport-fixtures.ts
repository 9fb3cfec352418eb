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

/** The real transport over the test seams (fixtures.ts), with the fake key, so every leak check has a key to look for. */
export function setupTransport(handler: FetchHandler, overrides: Partial<TransportOptions> = {}) {
  const { options: seams, ...recorded } = createTestSeams(handler);
  const request = createTransport({ ...seams, apiKey: TEST_API_KEY, ...overrides });
  const transport = {
    get: async () => (await request({ method: 'GET', url: THING_URL, schema: Answer })).data,
    post: async (body: unknown) => (await request({ method: 'POST', url: THING_URL, schema: Answer, body })).data,
  };
  return { transport, ...recorded };
}
