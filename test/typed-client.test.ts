import { hc, type InferRequestType, type InferResponseType } from 'hono/client';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import type { AppType } from '../src/core/app.js';
import type { errorEnvelope } from '../src/core/http/errors.js';
import type { CategoryListing, IssueDetail, IssueNeighbour, IssueSummary, PublicCategory } from '../src/core/public-shapes.js';
import { createTestApp } from './helpers.js';

/**
 * The response shapes of docs/contract.md ("The four public routes"), written out once: strict
 * schemas check every real response at run time, and their types are compared with the
 * service's own types at compile time (`npm run typecheck`), so a shape that changes on
 * either side fails here.
 */
const Category = z.strictObject({ name: z.string(), slug: z.string() });
const Listing = Category.extend({ count: z.number() });
const Summary = z.strictObject({
  slug: z.string(),
  subject: z.string(),
  previewText: z.string().nullable(),
  thumbnailUrl: z.string().nullable(),
  sentAt: z.string().nullable(),
  updatedAt: z.string().nullable(),
  category: Category.nullable(),
  readingMinutes: z.number().nullable(),
});
const Neighbour = z.strictObject({ slug: z.string(), subject: z.string(), sentAt: z.string().nullable() });
const Detail = Summary.extend({
  readingMinutes: z.number(),
  contentHtml: z.string().nullable(),
  newer: Neighbour.nullable(),
  older: Neighbour.nullable(),
});
const ArchiveBody = z.strictObject({
  ok: z.literal(true),
  data: z.array(Summary),
  meta: z.strictObject({
    total: z.number(),
    limit: z.number(),
    offset: z.number(),
    nextOffset: z.number().nullable(),
    previousOffset: z.number().nullable(),
  }),
});
const IssueBody = z.strictObject({ ok: z.literal(true), data: Detail });
const CategoriesBody = z.strictObject({ ok: z.literal(true), data: z.array(Listing) });
const SubscribeBody = z.strictObject({ ok: z.literal(true), data: z.strictObject({ accepted: z.literal(true) }) });
const ErrorBody = z.strictObject({
  ok: z.literal(false),
  error: z.strictObject({
    code: z.enum([
      'VALIDATION_ERROR',
      'NOT_FOUND',
      'METHOD_NOT_ALLOWED',
      'FORBIDDEN_ORIGIN',
      'CAPTCHA_FAILED',
      'CAPTCHA_REQUIRED',
      'PAYLOAD_TOO_LARGE',
      'UNSUPPORTED_MEDIA_TYPE',
      'RATE_LIMITED',
      'UPSTREAM_ERROR',
      'UPSTREAM_UNAVAILABLE',
      'INTERNAL_ERROR',
    ]),
    message: z.string(),
    details: z.array(z.strictObject({ path: z.string(), message: z.string(), siteKey: z.string().optional() })).optional(),
  }),
});

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

  it('keeps the service’s exported shapes equal to the documented ones', () => {
    expectTypeOf<PublicCategory>().toEqualTypeOf<z.infer<typeof Category>>();
    expectTypeOf<CategoryListing>().toEqualTypeOf<z.infer<typeof Listing>>();
    expectTypeOf<IssueNeighbour>().toEqualTypeOf<z.infer<typeof Neighbour>>();
    expectTypeOf<IssueSummary>().toEqualTypeOf<z.infer<typeof Summary>>();
    expectTypeOf<IssueDetail>().toEqualTypeOf<z.infer<typeof Detail>>();
    expectTypeOf<ReturnType<typeof errorEnvelope>>().toEqualTypeOf<z.infer<typeof ErrorBody>>();
  });

  it('infers each 200 body as exactly the documented shape', () => {
    // No fallback: if a route stopped typing its body, hc would infer `{}` and these would fail.
    expectTypeOf<InferResponseType<Client['api']['issues']['$get'], 200>>().toEqualTypeOf<z.infer<typeof ArchiveBody>>();
    expectTypeOf<InferResponseType<Client['api']['issues'][':slug']['$get'], 200>>().toEqualTypeOf<z.infer<typeof IssueBody>>();
    expectTypeOf<InferResponseType<Client['api']['categories']['$get'], 200>>().toEqualTypeOf<z.infer<typeof CategoriesBody>>();
    expectTypeOf<InferResponseType<Client['api']['subscribe']['$post'], 200>>().toEqualTypeOf<z.infer<typeof SubscribeBody>>();
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
    expect(body.data.older?.slug).toBe(ArchiveBody.parse(await (await client.api.issues.$get({ query: { limit: '2' } })).json()).data[1]!.slug);
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
