import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ERROR_STATUS, ROUTE_ERRORS, createErrorBodySchemas } from '../../src/core/http/errors.js';
import { API_SECURITY_HEADERS } from '../../src/core/http/response-headers.js';
import { ArchivePageBodySchema, IssueDetailSchema, IssueSummarySchema, PublicCategorySchema } from '../../src/core/public-shapes.js';
import { createArchiveQuerySchema } from '../../src/core/routes/archive-query.js';
import { SUBSCRIBE_FIELDS } from '../../src/core/subscribe/input.js';
import { createOpenApiDocument, serializeOpenApiDocument } from '../../src/tools/openapi/document.js';

/**
 * openapi.json is written by `npm run openapi` from the code's zod schemas and tables
 * (src/tools/openapi/document.ts): the committed file must be exactly what the code gives today,
 * and what the code gives must follow the schemas key for key.
 */
const committed = readFileSync(new URL('../../openapi.json', import.meta.url), 'utf8');
const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

// biome-ignore lint/suspicious/noExplicitAny: the generated document is walked freely
type Json = Record<string, any>;
const generated = createOpenApiDocument(version) as Json;
const schemas = generated.components.schemas as Record<string, Json>;
const keysOf = (schema: { shape: object }) => Object.keys(schema.shape);

describe('openapi.json, generated', () => {
  it('is what `npm run openapi` writes from the code today (run it after changing a schema)', () => {
    expect(committed, 'openapi.json is stale: run `npm run openapi`').toBe(serializeOpenApiDocument(generated));
  });

  it('tells a stale file from a current one', () => {
    const stale = JSON.parse(committed) as Json;
    delete stale.components.schemas.IssueSummary.properties.subject;
    expect(serializeOpenApiDocument(stale)).not.toBe(serializeOpenApiDocument(generated));
  });

  it('gives each public shape exactly the fields of its schema, every one required', () => {
    for (const [name, schema] of Object.entries({
      PublicCategory: PublicCategorySchema,
      IssueSummary: IssueSummarySchema,
      IssueDetail: IssueDetailSchema,
    })) {
      expect(Object.keys(schemas[name]!.properties), name).toEqual(keysOf(schema));
      expect(schemas[name]!.required, name).toEqual(keysOf(schema));
      expect(schemas[name]!.additionalProperties, name).toBe(false);
    }
    expect(Object.keys(schemas.ArchivePageBody!.properties.meta.properties)).toEqual(keysOf(ArchivePageBodySchema.shape.meta));
  });

  it('documents every parameter of the archive query schema on GET and HEAD /api/issues', () => {
    const parameters = Object.keys(createArchiveQuerySchema(5000).shape);
    for (const method of ['get', 'head']) {
      const named = (generated.paths['/api/issues'][method].parameters as { $ref: string }[]).map(({ $ref }) => $ref.split('/').at(-1));
      expect(
        named.filter((name) => parameters.includes(name!)),
        method,
      ).toEqual(parameters);
    }
    for (const name of parameters) expect(generated.components.parameters[name], name).toMatchObject({ name, in: 'query' });
  });

  it('documents every field of the subscribe schema, for JSON and for forms', () => {
    expect(Object.keys(schemas.SubscribeJsonInput!.properties)).toEqual(SUBSCRIBE_FIELDS);
    expect(Object.keys(schemas.SubscribeFormInput!.properties)).toEqual([...SUBSCRIBE_FIELDS, 'website']);
  });

  it('names the error codes of the envelope, and each route answers the statuses of its errors', () => {
    expect(schemas.ErrorBody!.properties.error.properties.code.enum).toEqual(Object.keys(ERROR_STATUS));
    expect(Object.keys(schemas.ErrorBody!.properties.error.properties)).toEqual(keysOf(createErrorBodySchemas().ErrorBody.shape.error));
    for (const [route, codes] of Object.entries(ROUTE_ERRORS)) {
      const item = generated.paths[route.replace(':slug', '{slug}')] as Json;
      const operation = item.get ?? item.post;
      const errorStatuses = Object.keys(operation.responses).filter((status) => Number(status) >= 400);
      expect(errorStatuses, route).toEqual([...new Set(codes.map((code) => String(ERROR_STATUS[code])))].sort());
    }
  });

  it('requires the security headers on every answer of every operation', () => {
    for (const [path, item] of Object.entries(generated.paths as Record<string, Json>)) {
      for (const [method, operation] of Object.entries(item).filter(([key]) => !key.startsWith('x-'))) {
        for (const [status, answer] of Object.entries(operation.responses as Record<string, Json>)) {
          const headers = (answer.$ref ? generated.components.responses[answer.$ref.split('/').at(-1)] : answer).headers as Record<
            string,
            Json
          >;
          expect(Object.keys(headers), `${method} ${path} ${status}`).toEqual(expect.arrayContaining(Object.keys(API_SECURITY_HEADERS)));
        }
      }
    }
  });
});
