import { parseConfig } from '../../core/config/config.js';
import { ERROR_STATUS, ROUTE_ERRORS, createErrorBodySchemas, type ErrorCode } from '../../core/http/errors.js';
import { API_SECURITY_HEADERS, CORS_POLICY, INCOMING_REQUEST_ID } from '../../core/http/response-headers.js';
import * as shapes from '../../core/public-shapes.js';
import { CACHE_STATES } from '../../core/reads/read-through-cache.js';
import { MEDIA_TYPES } from '../../core/routes/archive-format.js';
import { ARCHIVE_QUERY_DOCS, createArchiveQuerySchema } from '../../core/routes/archive-query.js';
import * as input from '../../core/subscribe/input.js';
import * as z from '../../core/zod.js';

// openapi.json (`npm run openapi`): shapes, parameters, errors and headers come from the code; the prose is written here.

type Json = Record<string, unknown>;

const ref = (kind: 'schemas' | 'parameters' | 'headers' | 'responses', name: string): Json => ({ $ref: `#/components/${kind}/${name}` });
const schemaRef = (name: string) => ref('schemas', name);
const parameter = (name: string) => ref('parameters', name);
const responseRef = (name: string) => ref('responses', name);
const code = (text: string) => `\`${text}\``;

// Drops a format's regex and the safe-integer bounds nobody set; adds the URL protocol rule zod leaves out.
function tidy({ zodSchema, jsonSchema }: { zodSchema: z.core.$ZodTypes; jsonSchema: z.core.JSONSchema.BaseSchema }): void {
  const def = zodSchema._zod.def as { check?: string; pattern?: RegExp; protocol?: RegExp };
  if (def.check === 'string_format' && jsonSchema.format !== undefined && jsonSchema.pattern === def.pattern?.source)
    delete jsonSchema.pattern;
  if (def.protocol) jsonSchema.pattern = `^${def.protocol.source.replace(/^\^|\$$/g, '')}:`;
  if (jsonSchema.maximum === Number.MAX_SAFE_INTEGER) delete jsonSchema.maximum;
  if (jsonSchema.minimum === Number.MIN_SAFE_INTEGER) delete jsonSchema.minimum;
}

function embedded(jsonSchema: z.core.JSONSchema.BaseSchema): Json {
  const { $schema: _schema, $id: _id, ...rest } = jsonSchema;
  return rest;
}

function componentSchemas(): Record<string, Json> {
  const components = z.registry<{ id: string }>();
  const published: Record<string, z.core.$ZodType> = shapes;
  const shapeNames = 'Slug PublicCategory IssueSummary IssueDetail ArchivePageBody IssueBody CategoriesBody SubscribeBody'.split(' ');
  const named = { ...Object.fromEntries(shapeNames.map((name) => [name, published[`${name}Schema`]!])), ...createErrorBodySchemas() };
  for (const [id, schema] of Object.entries(named)) components.add(schema, { id });
  const { schemas } = z.toJSONSchema(components, { uri: (id) => `#/components/schemas/${id}`, override: tidy });
  return Object.fromEntries(Object.entries(schemas).map(([name, schema]) => [name, embedded(schema)]));
}

function worded(properties: Record<string, Json>, words: Record<string, object | undefined>): Record<string, Json> {
  return Object.fromEntries(Object.entries(properties).map(([name, property]) => [name, { ...property, ...words[name] }]));
}

function subscribeInputs(honeypotField: string): { json: Json; form: Json } {
  const sent = embedded(z.toJSONSchema(input.SubscribeJsonInputSchema, { io: 'input', override: tidy }));
  const fields = worded(sent.properties as Record<string, Json>, input.SUBSCRIBE_FIELD_DOCS);
  const { description: _description, ...email } = fields.email!;
  const json: Json = { ...sent, properties: fields, description: 'Other fields are ignored (the honeypot aside).' };
  const form: Json = {
    type: 'object',
    required: sent.required,
    properties: {
      ...fields,
      email,
      optInAttestation: { type: 'string', description: `A ticked checkbox: ${input.FORM_CHECKED_VALUES.map(code).join(', ')} (any case).` },
      sourcePlatform: { ...fields.sourcePlatform, enum: [...(fields.sourcePlatform!.enum as string[]), ''] },
      [honeypotField]: { type: 'string', maxLength: 0, description: 'The honeypot: left empty by people.' },
    },
  };
  return { json, form };
}

function archiveQueryParameters(maxOffset: number): Record<string, Json> {
  const schema = createArchiveQuerySchema(maxOffset);
  // `q` ends in a transform: its words come from ARCHIVE_QUERY_DOCS alone.
  const read = z.toJSONSchema(schema, { io: 'output', unrepresentable: 'any', override: tidy });
  const sent = z.toJSONSchema(schema, { io: 'input', override: tidy });
  const required = new Set(sent.required ?? []);
  return Object.fromEntries(
    Object.entries(worded(read.properties as Record<string, Json>, ARCHIVE_QUERY_DOCS)).map(([name, property]) => {
      const { description, ...rules } = property;
      return [name, { name, in: 'query', ...(required.has(name) && { required: true }), description, schema: rules }];
    }),
  );
}

const HEADER_PARAMETERS: Record<string, Json> = Object.fromEntries(
  Object.entries({
    'If-None-Match': 'An `ETag` from an earlier answer: a 304 when it is still current.',
    Origin: "A browser's origin; one not in `ALLOWED_ORIGINS` gets no CORS grant (and a 403 on subscribe).",
    'Access-Control-Request-Method': undefined,
    Accept: 'Without `format`, an `Accept` preferring `application/atom+xml` or `application/rss+xml` asks for that feed.',
  }).map(([name, description]) => [name, { name, in: 'header', ...(description && { description }), schema: { type: 'string' } }]),
);

// `required`: every answer that lists the header carries it.
function responseHeaders(): Record<string, Json> {
  const header = (schema: Json, description?: string, required = true): Json => ({
    ...(description && { description }),
    ...(required && { required }),
    schema,
  });
  const text = { type: 'string' };
  const publicCacheControl = { type: 'string', pattern: '^public, max-age=\\d+, stale-while-revalidate=\\d+, stale-if-error=\\d+$' };
  return {
    'X-Request-Id': header({ type: 'string', pattern: INCOMING_REQUEST_ID.source }, "This request's id, as in the access log."),
    ...Object.fromEntries(Object.entries(API_SECURITY_HEADERS).map(([name, value]) => [name, header({ const: value })])),
    'Content-Security-Policy': header({ type: 'string', pattern: "frame-ancestors 'none'" }, "The API's; demo pages have their own."),
    'Access-Control-Allow-Origin': header(text, "The request's allowed `Origin`, or `*` when every origin is allowed.", false),
    'Access-Control-Expose-Headers': header({ const: CORS_POLICY.exposeHeaders.join(',') }, undefined, false),
    'Access-Control-Allow-Methods': header({ const: CORS_POLICY.allowMethods.join(',') }, undefined, false),
    'Access-Control-Allow-Headers': header({ const: CORS_POLICY.allowHeaders.join(',') }, undefined, false),
    'Access-Control-Max-Age': header({ type: 'integer', const: CORS_POLICY.maxAge }, undefined, false),
    Vary: header(text, '`Origin` unless every origin is allowed; `Accept-Encoding` where the body is kept compressed.', false),
    'Cache-Control-Public': header(publicCacheControl, 'Fresh for `CACHE_TTL_SECONDS`, then stale-while-revalidate and stale-if-error.'),
    'Cache-Control-No-Store': header({ const: 'no-store' }, 'Subscribe answers and errors are never cached.'),
    ETag: header({ type: 'string', pattern: '^"[^"]+"$' }, 'A strong validator; each content coding has its own.'),
    'Content-Encoding': header({ type: 'string', enum: ['br', 'gzip'] }, 'As `Accept-Encoding` asked (Node, from 1 KiB).', false),
    'X-Cache': header({ enum: [...CACHE_STATES] }, "How this service's cache answered."),
    Age: header({ type: 'integer', minimum: 0 }, 'Seconds since a STALE copy was fetched.', false),
    'Retry-After': header({ type: 'integer', minimum: 1 }, 'Seconds to wait before trying again.'),
    Allow: header(text, 'The methods this path answers.'),
    Location: header({ type: 'string', format: 'uri' }, 'The page to go back to.'),
  };
}

// `Cache-Control-*` names the component that describes `Cache-Control` there.
function headersOf(names: readonly string[]): Record<string, Json> {
  const all = [...COMMON_HEADERS, ...names];
  return Object.fromEntries(all.map((name) => [name.startsWith('Cache-Control') ? 'Cache-Control' : name, ref('headers', name)]));
}

const COMMON_HEADERS = [
  'X-Request-Id',
  ...Object.keys(API_SECURITY_HEADERS),
  'Access-Control-Allow-Origin',
  'Access-Control-Expose-Headers',
  'Vary',
];
const READ_HEADERS = ['Cache-Control-Public', 'ETag', 'Content-Encoding', 'X-Cache', 'Age'];

const ERROR_WORDING: Record<ErrorCode, string> = {
  VALIDATION_ERROR: 'A query parameter, the slug or a body field is not valid; `details` lists each `{ path, message }`.',
  BAD_REQUEST: "Node only: the request's `Host` header or path cannot be read as a URL.",
  NOT_FOUND: 'No such issue, or no such route.',
  METHOD_NOT_ALLOWED: 'The path exists but not with this method; `Allow` lists the methods it answers.',
  FORBIDDEN_ORIGIN: 'The browser `Origin` is not in `ALLOWED_ORIGINS` (a form post gets a short HTML page, or a 303 with an error).',
  CAPTCHA_FAILED: 'Turnstile is on and the `cf-turnstile-response` token was rejected.',
  CAPTCHA_REQUIRED: 'Turnstile is on and no `cf-turnstile-response` token was sent; `details[0].siteKey` renders the widget.',
  PAYLOAD_TOO_LARGE: `The body is over ${input.SUBSCRIBE_MAX_BODY_BYTES / 1024} KiB.`,
  UNSUPPORTED_MEDIA_TYPE: 'The body is not JSON, URL-encoded or multipart form data.',
  RATE_LIMITED: 'Too many subscribe attempts from this client address; retry after `Retry-After` seconds.',
  UPSTREAM_ERROR: 'The newsletter service failed, rejected our key, or answered with something malformed.',
  UPSTREAM_UNAVAILABLE: 'The newsletter service rate-limited us or timed out; retry after `Retry-After` seconds.',
  INTERNAL_ERROR: 'An unexpected failure; it is logged with the request id.',
};
const ERROR_HEADERS: Partial<Record<ErrorCode, string>> = {
  METHOD_NOT_ALLOWED: 'Allow',
  RATE_LIMITED: 'Retry-After',
  UPSTREAM_UNAVAILABLE: 'Retry-After',
};

const codesOf = (status: number) => (Object.keys(ERROR_STATUS) as ErrorCode[]).filter((one) => ERROR_STATUS[one] === status);
// An error status's response component is named after its first code: `ValidationError`.
const errorName = (status: number) =>
  codesOf(status)[0]!
    .toLowerCase()
    .replace(/(?:^|_)([a-z])/g, (_match, letter: string) => letter.toUpperCase());

function errorResponses(): Record<string, Json> {
  const responses: Record<string, Json> = {};
  for (const status of new Set(Object.values(ERROR_STATUS))) {
    const name = errorName(status);
    const codes = codesOf(status);
    const description = codes.map((one) => `${status} ${code(one)}: ${ERROR_WORDING[one]}`).join(' ');
    const headers = headersOf(['Cache-Control-No-Store', ...new Set(codes.flatMap((one) => ERROR_HEADERS[one] ?? []))]);
    const error: Json = { type: 'object', properties: { code: codes.length === 1 ? { const: codes[0] } : { enum: codes } } };
    if (codes.every((one) => one === 'VALIDATION_ERROR')) {
      (error.properties as Json).details = { type: 'array', items: schemaRef('ValidationIssue') };
      error.required = ['details'];
    }
    const schema = { allOf: [schemaRef('ErrorBody'), { type: 'object', properties: { error } }] };
    const html = codes.includes('FORBIDDEN_ORIGIN') && 'A short page for a visitor without JavaScript: nothing was sent.';
    const content = { 'application/json': { schema }, ...(html && { 'text/html': { schema: { type: 'string', description: html } } }) };
    responses[name] = { description, headers, content };
    responses[`${name}Head`] = { description: `${description} (HEAD: no body)`, headers };
  }
  return responses;
}

type Operation = { operationId: string; summary: string; description: string; parameters: readonly Json[] };

function pathItem(path: string, operation: Operation & ({ ok: Json } | { requestBody: Json; answers: Json })): Json {
  const route = path.replace(/\{(\w+)\}/g, ':$1') as keyof typeof ROUTE_ERRORS;
  const statuses = [...new Set(ROUTE_ERRORS[route].map((one) => ERROR_STATUS[one]))].sort((a, b) => a - b);
  const errorAnswers = (suffix: string) =>
    Object.fromEntries(statuses.map((status) => [String(status), responseRef(`${errorName(status)}${suffix}`)]));
  const pathParameters = [...path.matchAll(/\{(\w+)\}/g)].map(([, name]) => parameter(name!));
  const options = {
    operationId: `${operation.operationId}Preflight`,
    summary: 'CORS preflight',
    description: 'A 204 for any origin; `Access-Control-Allow-*` only for an `Origin` in `ALLOWED_ORIGINS`, never with credentials.',
    tags: ['cors'],
    parameters: [...pathParameters, parameter('Origin'), parameter('Access-Control-Request-Method')],
    responses: { '204': responseRef('Preflight') },
  };
  const rest = { options, 'x-other-methods': responseRef('MethodNotAllowed') };
  if (!('ok' in operation)) {
    const { answers, requestBody, parameters, ...named } = operation;
    return { post: { ...named, tags: ['subscribe'], parameters, requestBody, responses: { ...answers, ...errorAnswers('') } }, ...rest };
  }
  const { ok, parameters, ...named } = operation;
  const all = [...pathParameters, ...parameters];
  const head = {
    operationId: `${named.operationId}Head`,
    summary: `${named.summary} (headers only)`,
    description: `The headers \`GET ${path}\` would send, with the same validation and caching; no body.`,
    tags: ['reads'],
    parameters: all,
    responses: {
      '200': { description: 'As GET, without the body.', headers: ok.headers },
      '304': responseRef('NotModifiedHead'),
      ...errorAnswers('Head'),
    },
  };
  const responses = { '200': ok, '304': responseRef('NotModified'), ...errorAnswers('') };
  return { get: { ...named, tags: ['reads'], parameters: all, responses }, head, ...rest };
}

export function createOpenApiDocument(version: string): Json {
  const defaults = parseConfig({});
  if (!defaults.ok) throw new Error(`the default configuration does not parse: ${defaults.problems.join('; ')}`);
  const { config } = defaults;

  const queryParameters = archiveQueryParameters(config.archiveMaxIssues);
  const inputs = subscribeInputs(config.honeypotField);
  const feed = { schema: { type: 'string', description: 'An Atom 1.0 or RSS 2.0 document of the same page of the archive.' } };
  const readAnswer = (description: string, content: Json): Json => ({ description, headers: headersOf(READ_HEADERS), content });
  const jsonOf = (name: string) => ({ [MEDIA_TYPES.json]: { schema: schemaRef(name) } });
  const fromCache = 'The data, from the cache or the upstream.';

  const paths: Json = {
    '/api/issues': pathItem('/api/issues', {
      operationId: 'listIssues',
      summary: 'A page of the public archive, newest first',
      description: 'Sent, website-visible issues, newest `sentAt` first (undated last, ties by slug).',
      parameters: [...Object.keys(queryParameters).map(parameter), parameter('If-None-Match'), parameter('Accept')],
      ok: readAnswer(`${fromCache} A feed if asked for.`, {
        ...jsonOf('ArchivePageBody'),
        [MEDIA_TYPES.atom]: feed,
        [MEDIA_TYPES.rss]: feed,
      }),
    }),
    '/api/issues/{slug}': pathItem('/api/issues/{slug}', {
      operationId: 'getIssue',
      summary: 'One public issue with its HTML',
      description: 'A slug that does not match the pattern is a 422; an unknown, unsent or private issue a 404.',
      parameters: [parameter('If-None-Match')],
      ok: readAnswer(fromCache, jsonOf('IssueBody')),
    }),
    '/api/categories': pathItem('/api/categories', {
      operationId: 'listCategories',
      summary: 'Categories for archive navigation, sorted by name',
      description: 'Every category of the publication, sorted by name (case-insensitive), then slug.',
      parameters: [parameter('If-None-Match')],
      ok: readAnswer(fromCache, jsonOf('CategoriesBody')),
    }),
    '/api/subscribe': pathItem('/api/subscribe', {
      operationId: 'subscribe',
      summary: 'Subscribe one email address',
      description: 'The reply never reveals whether the address was new, already subscribed or refused. A form post gets a 303.',
      parameters: [parameter('Origin')],
      requestBody: {
        required: true,
        content: {
          'application/json': { schema: schemaRef('SubscribeJsonInput') },
          'application/x-www-form-urlencoded': { schema: schemaRef('SubscribeFormInput') },
          'multipart/form-data': { schema: schemaRef('SubscribeFormInput') },
        },
      },
      answers: {
        '200': { description: 'Accepted.', headers: headersOf(['Cache-Control-No-Store']), content: jsonOf('SubscribeBody') },
        '303': { description: 'A form post: back to its page with the result', headers: headersOf(['Cache-Control-No-Store', 'Location']) },
      },
    }),
  };

  const notModified = '`If-None-Match` names the current `ETag`: no body.';
  const notModifiedHeaders = headersOf(['Cache-Control-Public', 'ETag', 'X-Cache', 'Age']);
  const responses: Record<string, Json> = {
    NotModified: { description: notModified, headers: notModifiedHeaders },
    Preflight: {
      description: 'No body.',
      headers: headersOf(['Access-Control-Allow-Methods', 'Access-Control-Allow-Headers', 'Access-Control-Max-Age']),
    },
    NotModifiedHead: { description: `${notModified} (HEAD: no body)`, headers: notModifiedHeaders },
    ...errorResponses(),
  };
  // An unused component is a lint warning.
  const used = new Set(JSON.stringify(paths).match(/(?<=#\/components\/responses\/)\w+/g));

  return {
    openapi: '3.1.0',
    info: {
      title: 'newsletter-bff',
      version,
      summary: 'The four public routes of a newsletter backend-for-frontend.',
      description:
        'Every body is JSON in one envelope: `{ "ok": true, "data": … }` or `{ "ok": false, "error": { … } }`. ' +
        `Every answer carries the security headers ${Object.keys(API_SECURITY_HEADERS).sort().map(code).join(', ')}.`,
      license: { name: 'MIT', identifier: 'MIT' },
    },
    servers: [{ url: `http://${config.host}:${config.port}`, description: 'npm start (demo mode without NEWSLETTER_API_KEY)' }],
    security: [],
    tags: [
      { name: 'reads', description: 'Cached public reads: `ETag`, 304, `Cache-Control`, `X-Cache`' },
      { name: 'subscribe', description: 'The subscribe endpoint, for a JSON client or a plain HTML form' },
      { name: 'cors', description: 'CORS preflights, answered for every route' },
    ],
    paths,
    components: {
      parameters: {
        ...queryParameters,
        slug: { name: 'slug', in: 'path', required: true, schema: schemaRef('Slug') },
        ...HEADER_PARAMETERS,
      },
      headers: responseHeaders(),
      responses: Object.fromEntries(Object.entries(responses).filter(([name]) => used.has(name))),
      schemas: { ...componentSchemas(), SubscribeJsonInput: inputs.json, SubscribeFormInput: inputs.form },
    },
  };
}

export const serializeOpenApiDocument = (document: Json): string => `${JSON.stringify(document, null, 2)}\n`;
