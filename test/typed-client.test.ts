import { hc, type InferRequestType, type InferResponseType } from 'hono/client';
import { describe, expect, expectTypeOf, it } from 'vitest';
import type { AppType } from '../src/core/app.js';
import { createErrorBodySchemas } from '../src/core/http/errors.js';
import {
  ArchivePageBodySchema as ArchiveBody,
  CategoriesBodySchema as CategoriesBody,
  IssueBodySchema as IssueBody,
  SubscribeBodySchema as SubscribeBody,
  type CategoryListing,
} from '../src/core/public-shapes.js';
import type * as z from '../src/core/zod.js';
import { createTestApp } from './helpers.js';

/**
 * The typed client against the schemas of docs/contract.md (src/core/public-shapes.ts, the error
 * envelope of src/core/http/errors.ts): `hc` must infer each body as the schema's type, and every
 * real answer parses with the schema (strict: a field the schema lacks fails).
 */
const { ErrorBody } = createErrorBodySchemas();

/** A typed client over the real app: its fetch is `app.request`, so no socket is opened. */
function createTypedClient() {
  const { app } = createTestApp();
  return hc<AppType>('http://bff.test', { fetch: async (input: RequestInfo | URL, init?: RequestInit) => app.request(input, init) });
}

type Client = ReturnType<typeof createTypedClient>;

describe('typed client (hono/client hc<AppType>)', () => {
  it('types the requests: paths, the archive query and the slug parameter', () => {
    expectTypeOf<InferRequestType<Client['api']['issues'][':slug']['$get']>>().toEqualTypeOf<{ param: { slug: string } }>();
    expectTypeOf<InferRequestType<Client['api']['issues']['$get']>>().toEqualTypeOf<{
      query: { limit?: string; offset?: string; category?: string; q?: string };
    }>();
    expectTypeOf<InferRequestType<Client['api']['subscribe']['$post']>>().toEqualTypeOf<{
      json: { email: string; optInAttestation: true; source?: string; sourcePlatform?: 'x' | 'linkedin' };
    }>();
    expectTypeOf<Client['api']['categories']['$get']>().toBeFunction();
    expectTypeOf<Client['api']['subscribe']['$post']>().toBeFunction();
  });

  it('infers each 200 body as exactly the documented shape', () => {
    // No fallback: if a route stopped typing its body, hc would infer `{}` and these would fail.
    expectTypeOf<InferResponseType<Client['api']['issues']['$get'], 200>>().toEqualTypeOf<z.infer<typeof ArchiveBody>>();
    expectTypeOf<InferResponseType<Client['api']['issues'][':slug']['$get'], 200>>().toEqualTypeOf<z.infer<typeof IssueBody>>();
    expectTypeOf<InferResponseType<Client['api']['categories']['$get'], 200>>().toEqualTypeOf<z.infer<typeof CategoriesBody>>();
    expectTypeOf<InferResponseType<Client['api']['subscribe']['$post'], 200>>().toEqualTypeOf<z.infer<typeof SubscribeBody>>();
  });

  it('types every route’s error answers beside its successes, as ROUTE_ERRORS lists them', () => {
    type StatusOf<Endpoint extends (...args: never[]) => Promise<{ status: number }>> = Awaited<ReturnType<Endpoint>>['status'];
    expectTypeOf<StatusOf<Client['api']['issues']['$get']>>().toEqualTypeOf<200 | 304 | 404 | 422 | 500 | 502 | 503>();
    expectTypeOf<StatusOf<Client['api']['issues'][':slug']['$get']>>().toEqualTypeOf<200 | 304 | 404 | 422 | 500 | 502 | 503>();
    expectTypeOf<StatusOf<Client['api']['categories']['$get']>>().toEqualTypeOf<200 | 304 | 500 | 502 | 503>();
    expectTypeOf<StatusOf<Client['api']['subscribe']['$post']>>().toEqualTypeOf<
      200 | 303 | 403 | 413 | 415 | 422 | 429 | 500 | 502 | 503
    >();
    // Each error status carries the envelope of its own codes.
    expectTypeOf<InferResponseType<Client['api']['issues'][':slug']['$get'], 404>>().toEqualTypeOf<{
      ok: false;
      error: { code: 'NOT_FOUND'; message: string; details?: { path: string; message: string; siteKey?: string }[] };
    }>();
    expectTypeOf<InferResponseType<Client['api']['subscribe']['$post'], 403>['error']['code']>().toEqualTypeOf<
      'FORBIDDEN_ORIGIN' | 'CAPTCHA_FAILED' | 'CAPTCHA_REQUIRED'
    >();
    expectTypeOf<InferResponseType<Client['api']['subscribe']['$post'], 429>['error']['code']>().toEqualTypeOf<'RATE_LIMITED'>();
  });

  it('narrows an answer to the error envelope by its status, so a site can tell a missing issue from a failure', async () => {
    const client = createTypedClient();
    const response = await client.api.issues[':slug'].$get({ param: { slug: 'no-such-issue' } });
    expect(response.status).toBe(404);
    if (response.status !== 404) return;
    const body = await response.json();
    expectTypeOf(body.error.code).toEqualTypeOf<'NOT_FOUND'>();
    expect(ErrorBody.parse(body).error.code).toBe('NOT_FOUND');
  });

  it('lists a page of the archive with a typed query, in the documented shape', async () => {
    const client = createTypedClient();
    const response = await client.api.issues.$get({ query: { limit: '2', offset: '1', category: 'interviews' } });
    expect(response.status).toBe(200);
    const body = ArchiveBody.parse(await response.json());
    expect(body.data).toHaveLength(2);
    expect(body.meta).toEqual({ total: expect.any(Number), limit: 2, offset: 1, nextOffset: 3, previousOffset: 0 });
    expect(body.data.every((issue) => issue.category?.slug === 'interviews')).toBe(true);
  });

  it('reads one issue through the typed slug parameter, in the documented shape', async () => {
    const client = createTypedClient();
    const { data } = ArchiveBody.parse(await (await client.api.issues.$get({ query: { limit: '1', offset: '0' } })).json());
    const slug = data[0]!.slug;
    const response = await client.api.issues[':slug'].$get({ param: { slug } });
    expect(response.status).toBe(200);
    const body = IssueBody.parse(await response.json());
    expect(body.data.slug).toBe(slug);
    expect(body.data.contentHtml).toContain('<h1>');
    // The newest issue: nothing newer, and the second one older.
    expect(body.data.newer).toBeNull();
    expect(body.data.older?.slug).toBe(
      ArchiveBody.parse(await (await client.api.issues.$get({ query: { limit: '2' } })).json()).data[1]!.slug,
    );
  });

  it('searches with the typed q parameter, every word matching', async () => {
    const client = createTypedClient();
    const response = await client.api.issues.$get({ query: { q: 'beekeepers rooftop', limit: '5' } });
    expect(response.status).toBe(200);
    const body = ArchiveBody.parse(await response.json());
    expect(body.meta.total).toBeGreaterThan(0);
    expect(body.data[0]!.subject).toMatch(/Rooftop Beekeepers/);
    expectTypeOf(body.data[0]!.readingMinutes).toEqualTypeOf<number | null>();
  });

  it('reads the categories in the documented shape', async () => {
    const client = createTypedClient();
    const response = await client.api.categories.$get();
    expect(response.status).toBe(200);
    if (response.status !== 200) return;
    const typed = await response.json();
    expectTypeOf(typed.data).toEqualTypeOf<CategoryListing[]>();
    const body = CategoriesBody.parse(typed);
    expect(body.data.map((category) => category.name)).toEqual([...body.data.map((category) => category.name)].sort());
  });

  it('subscribes with JSON and gets the documented answer', async () => {
    const client = createTypedClient();
    const response = await client.api.subscribe.$post(
      { json: { email: 'typed.client@example.com', optInAttestation: true } },
      { headers: { Accept: 'application/json' } },
    );
    expect(response.status).toBe(200);
    if (response.status !== 200) return;
    const body = await response.json();
    expectTypeOf(body).toEqualTypeOf<z.infer<typeof SubscribeBody>>();
    expect(SubscribeBody.parse(body)).toEqual({ ok: true, data: { accepted: true } });
  });

  it('gets errors in the documented error envelope', async () => {
    const client = createTypedClient();
    const missing = await client.api.issues[':slug'].$get({ param: { slug: 'no-such-issue' } });
    expect(missing.status).toBe(404);
    expect(ErrorBody.parse(await missing.json()).error.code).toBe('NOT_FOUND');

    const invalid = await client.api.issues.$get({ query: { limit: '0', offset: '0' } });
    expect(invalid.status).toBe(422);
    const body = ErrorBody.parse(await invalid.json());
    expect(body.error.code).toBe('VALIDATION_ERROR');
    expect(body.error.details?.map((detail) => detail.path)).toEqual(['limit']);
  });

  it('builds the URLs a site fetches with $url()', () => {
    const client = createTypedClient();
    expect(client.api.issues.$url({ query: { limit: '10', offset: '20', category: 'interviews' } }).href).toBe(
      'http://bff.test/api/issues?limit=10&offset=20&category=interviews',
    );
    expect(client.api.issues[':slug'].$url({ param: { slug: 'planning-next-years-plot' } }).href).toBe(
      'http://bff.test/api/issues/planning-next-years-plot',
    );
  });
});
