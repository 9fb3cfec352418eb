import { Validator } from '@seriousme/openapi-schema-validator';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ERROR_STATUS, ROUTE_ERRORS } from '../../src/core/http/errors.js';
import { API_SECURITY_HEADERS, CORS_POLICY } from '../../src/core/http/response-headers.js';
import { createTestApp } from '../helpers.js';
import { createOpenApiValidator, type Exchange } from './openapi-validator.js';

const document = JSON.parse(readFileSync(new URL('../../openapi.json', import.meta.url), 'utf8')) as Record<string, unknown>;
const check = createOpenApiValidator(document);
const schemas = (
  document.components as { schemas: Record<string, { properties: Record<string, { properties: Record<string, unknown> }> }> }
).schemas;

/** A real answer of the app, as the contract check sees it, with `change` applied. */
async function exchangeOf(
  method: string,
  path: string,
  change: (exchange: Exchange) => Exchange = (exchange) => exchange,
): Promise<Exchange> {
  const { app } = createTestApp();
  const response = await app.request(path, { method, headers: { Origin: 'https://site.example' } });
  return change({
    method,
    url: `http://bff.test${path}`,
    status: response.status,
    headers: new Headers(response.headers),
    body: await response.text(),
  });
}

describe('openapi.json', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    const result = await new Validator().validate(document);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(document.openapi).toMatch(/^3\.1\./);
  });

  it('carries the package version', () => {
    const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    expect((document.info as { version: string }).version).toBe(version);
  });

  it('names exactly the error codes the service renders', () => {
    expect(schemas.ErrorBody!.properties.error!.properties.code).toEqual({ type: 'string', enum: Object.keys(ERROR_STATUS) });
  });

  it('documents for each route exactly the error statuses its typed answers list (ROUTE_ERRORS)', () => {
    const statusesOf = (route: keyof typeof ROUTE_ERRORS) =>
      [...new Set(ROUTE_ERRORS[route].map((code) => ERROR_STATUS[code]))].sort((a, b) => a - b);
    const paths = document.paths as Record<string, Record<string, { responses: Record<string, unknown> }>>;
    const errorStatuses = new Set<number>(Object.values(ERROR_STATUS));
    const documented = (path: string, method: string) =>
      Object.keys(paths[path]![method]!.responses)
        .map(Number)
        .filter((status) => errorStatuses.has(status));
    expect(documented('/api/issues', 'get')).toEqual(statusesOf('/api/issues'));
    expect(documented('/api/issues/{slug}', 'get')).toEqual(statusesOf('/api/issues/:slug'));
    expect(documented('/api/categories', 'get')).toEqual(statusesOf('/api/categories'));
    expect(documented('/api/subscribe', 'post')).toEqual(statusesOf('/api/subscribe'));
  });

  it('names exactly the security headers every JSON answer carries', () => {
    const description = (document.info as { description: string }).description;
    const named = /security headers ((?:`[\w-]+`(?:, | and )?)+)/.exec(description)?.[1]?.match(/(?<=`)[\w-]+(?=`)/g);
    expect(named).toEqual(Object.keys(API_SECURITY_HEADERS).sort());
  });

  it('names exactly the headers the CORS grant exposes', () => {
    const headers = (document.components as { headers: Record<string, { schema: unknown }> }).headers;
    expect(headers['Access-Control-Expose-Headers']!.schema).toEqual({ const: CORS_POLICY.exposeHeaders.join(',') });
  });
});

describe('the contract check of every response', () => {
  it('passes real answers of each route', async () => {
    for (const [method, path] of [
      ['GET', '/api/issues?limit=2'],
      ['HEAD', '/api/categories'],
      ['GET', '/api/issues/no-such-issue'],
      ['GET', '/api/issues/bad.slug'],
      ['DELETE', '/api/categories'],
      ['OPTIONS', '/api/subscribe'],
      ['GET', '/api/subscribers'],
    ] as const) {
      expect(check(await exchangeOf(method, path)), `${method} ${path}`).toEqual([]);
    }
  });

  it('reports a status the operation does not document', async () => {
    const exchange = await exchangeOf('GET', '/api/categories', (real) => ({ ...real, status: 418 }));
    expect(check(exchange)).toEqual(['status 418 is not documented for GET /api/categories']);
  });

  it('reports a missing required header and a header of the wrong form', async () => {
    const exchange = await exchangeOf('GET', '/api/categories', (real) => {
      real.headers.delete('etag');
      real.headers.set('x-cache', 'WARM');
      return real;
    });
    expect(check(exchange)).toEqual(['header ETag is missing', 'header X-Cache: "WARM" must be equal to one of the allowed values']);
  });

  it('reports a body field the schema does not have, and a body where none is documented', async () => {
    const extra = await exchangeOf('GET', '/api/categories', (real) => ({
      ...real,
      body: JSON.stringify({ ok: true, data: [{ name: 'A', slug: 'a', id: 7 }] }),
    }));
    expect(check(extra)).toEqual([expect.stringMatching(/^body: .*must NOT have additional properties/)]);
    const head = await exchangeOf('HEAD', '/api/categories', (real) => ({ ...real, body: '{}' }));
    expect(check(head)).toEqual(['a body where none is documented: {}']);
  });

  it('reports a 405 whose Allow differs from the methods the document lists', async () => {
    const exchange = await exchangeOf('PUT', '/api/subscribe', (real) => {
      real.headers.set('allow', 'POST');
      return real;
    });
    expect(check(exchange)).toEqual(['Allow is POST, the document lists POST, OPTIONS']);
  });
});
