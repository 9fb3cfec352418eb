import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_STATUS } from '../../src/core/http/errors.js';
import { createFakeUpstream } from '../support/fake-upstream/fake.js';
import { createLeakScanner, LEAK_API_KEY, UPSTREAM_HEADERS } from '../fault/leak-scan.js';
import { createScriptedFetch, createTestApp, TEST_BASE_URL, type RecordedCall } from '../helpers.js';

// Issue 7 "Property-based fuzzing": hostile input on all four routes, against a healthy upstream.
// A fixed seed and case count keep CI deterministic; FUZZ_SEED and FUZZ_RUNS (cases per property)
// run it longer or differently on a laptop, e.g. `FUZZ_SEED=7 FUZZ_RUNS=20000 npx vitest run test/fuzz`.

const SEED = Number(process.env.FUZZ_SEED ?? 20_260_507);
const RUNS_OVERRIDE = process.env.FUZZ_RUNS ? Number(process.env.FUZZ_RUNS) : undefined;
const runs = (fallback: number) => RUNS_OVERRIDE ?? fallback;
/** The origin app.request gives a relative path; the service's own origin is always allowed. */
const OWN_ORIGIN = 'http://localhost';
const ALLOWED_ORIGIN = 'https://site.example';
const PUBLIC_PATHS = ['/api/issues', '/api/categories', '/api/subscribe'];
const BODY_STATUSES_WITHOUT_BODY = new Set([204, 304]);
const SUBSCRIBE_FORWARDED_KEYS = new Set(['email', 'optInAttestation', 'sourceType', 'source', 'sourcePlatform']);

const leaks = createLeakScanner();
const stats = { cases: 0, unrepresentable: 0, byStatus: new Map<number, number>(), upstreamCalls: 0 };

/** What must hold of Object.prototype and friends before and after every input below. */
function prototypeSnapshot(): string {
  const describe = (target: object) =>
    Object.getOwnPropertyNames(target)
      .sort()
      .map((name) => {
        const descriptor = Object.getOwnPropertyDescriptor(target, name);
        return `${name}:${typeof descriptor?.value}:${typeof descriptor?.get}`;
      })
      .join(',');
  return [Object.prototype, Array.prototype, Function.prototype, String.prototype].map(describe).join('\n');
}
let prototypesBefore = '';

// ---------------------------------------------------------------------------------------------
// The service under test: the real app and upstream client over a healthy scripted upstream.
// ---------------------------------------------------------------------------------------------

function createFuzzTarget(env: Record<string, string> = {}) {
  const fake = createFakeUpstream({ apiKey: LEAK_API_KEY, baseUrl: TEST_BASE_URL, headers: { ...UPSTREAM_HEADERS } });
  fake.publish('first-light');
  const upstream = createScriptedFetch((call: RecordedCall) =>
    fake.fetch(call.url, { method: call.method, headers: call.headers, body: call.body ?? null }),
  );
  const test = createTestApp({
    fetch: upstream.fetch,
    // Limits high enough that thousands of inputs meet the routes, not the limits (the surge
    // threshold too: a thousand valid posts in a moment are a surge, tested in test/subscribe/surge.test.ts).
    env: {
      NEWSLETTER_API_KEY: LEAK_API_KEY,
      SUBSCRIBE_RATE_LIMIT_PER_MINUTE: '10000',
      SUBSCRIBE_SURGE_PER_MINUTE: '100000',
      READ_BUDGET_PER_MINUTE: '100000',
      READ_BUDGET_PER_CLIENT_PER_MINUTE: '100000',
      ...env,
    },
  });
  return { ...test, calls: upstream.calls };
}

type FuzzTarget = ReturnType<typeof createFuzzTarget>;

interface RequestSpec {
  method: string;
  path: string;
  headers: [string, string][];
  body?: string | Uint8Array<ArrayBuffer> | undefined;
}

function describeSpec(spec: RequestSpec): string {
  const body = spec.body === undefined ? '' : typeof spec.body === 'string' ? spec.body.slice(0, 300) : `<${spec.body.byteLength} bytes>`;
  return `${spec.method} ${spec.path.slice(0, 300)}\n${spec.headers.map(([n, v]) => `${n}: ${v.slice(0, 120)}`).join('\n')}\n\n${body}`;
}

/** Builds the request the way a client would; undefined when the Request API itself refuses it. */
function buildRequest(spec: RequestSpec): Request | undefined {
  try {
    const headers = new Headers();
    for (const [name, value] of spec.headers) headers.append(name, value);
    const hasBody = spec.body !== undefined && spec.method.toUpperCase() !== 'GET' && spec.method.toUpperCase() !== 'HEAD';
    return new Request(OWN_ORIGIN + spec.path, { method: spec.method, headers, body: hasBody ? spec.body : undefined });
  } catch {
    return undefined;
  }
}

function fail(message: string, spec: RequestSpec, status: number, body: string): never {
  throw new Error(`${message}\n--- request ---\n${describeSpec(spec)}\n--- response ${status} ---\n${body.slice(0, 500)}`);
}

type Envelope =
  | { ok: true; data: unknown; meta?: unknown }
  | { ok: false; error: { code: keyof typeof ERROR_STATUS; message: string; details?: { path: string; message: string }[] } };

function parseEnvelope(body: string): Envelope | undefined {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const record = value as Record<string, unknown>;
  if (record.ok === true) {
    if (!('data' in record) || Object.keys(record).some((key) => !['ok', 'data', 'meta'].includes(key))) return undefined;
    return record as Envelope;
  }
  if (record.ok !== false || Object.keys(record).some((key) => key !== 'ok' && key !== 'error')) return undefined;
  const error = record.error as Record<string, unknown> | undefined;
  if (typeof error !== 'object' || error === null) return undefined;
  if (typeof error.code !== 'string' || !(error.code in ERROR_STATUS) || typeof error.message !== 'string') return undefined;
  if (Object.keys(error).some((key) => !['code', 'message', 'details'].includes(key))) return undefined;
  if (error.details !== undefined) {
    if (!Array.isArray(error.details)) return undefined;
    for (const detail of error.details) {
      if (typeof detail?.path !== 'string' || typeof detail?.message !== 'string') return undefined;
    }
  }
  return record as Envelope;
}

/** A 404 that needed the upstream's answer: a well-formed slug it does not know. */
function isUpstreamNotFound(spec: RequestSpec, envelope: Envelope | undefined): boolean {
  return (
    envelope?.ok === false &&
    envelope.error.code === 'NOT_FOUND' &&
    /^\/api\/issues\/[A-Za-z0-9_-]+$/.test(new URL(OWN_ORIGIN + spec.path).pathname)
  );
}

/**
 * Sends one fuzzed request and checks every property the fuzz suite stands for on its answer:
 * no 5xx, the JSON envelope (or an empty 204/304, or a 303 to an allowed origin), no upstream
 * call for a rejected input, no upstream header, internal field or key in the answer.
 */
async function checkOne(target: FuzzTarget, spec: RequestSpec): Promise<void> {
  const request = buildRequest(spec);
  if (!request) {
    stats.unrepresentable += 1;
    return;
  }
  stats.cases += 1;
  const before = target.calls.length;
  const response = await target.app.request(request);
  const body = await response.text();
  const callsMade = target.calls.slice(before);
  stats.upstreamCalls += callsMade.length;
  const { status } = response;
  stats.byStatus.set(status, (stats.byStatus.get(status) ?? 0) + 1);
  leaks.scanResponse(`${spec.method} ${spec.path.slice(0, 80)} → ${status}`, response, body);

  if (status >= 500) fail(`a ${status} for client input`, spec, status, body);

  const method = request.method;
  if (status === 303) {
    const location = response.headers.get('location') ?? '';
    let url: URL;
    try {
      url = new URL(location);
    } catch {
      fail('a 303 without an absolute Location', spec, status, body);
    }
    if (url.origin !== ALLOWED_ORIGIN && url.origin !== OWN_ORIGIN)
      fail(`a 303 to a host that is not allowed: ${location}`, spec, status, body);
    const errorCode = url.searchParams.get('subscribe_error');
    if (errorCode !== null) {
      if (errorCode.startsWith('UPSTREAM_') || errorCode === 'INTERNAL_ERROR')
        fail(`a form post redirected with ${errorCode}`, spec, status, body);
      if (callsMade.length > 0) fail(`${callsMade.length} upstream call(s) for a rejected form post`, spec, status, body);
    }
    if (body !== '') fail('a 303 with a body', spec, status, body);
    return;
  }
  if (BODY_STATUSES_WITHOUT_BODY.has(status)) {
    if (body !== '') fail(`a ${status} with a body`, spec, status, body);
    if (status === 204 && method !== 'OPTIONS') fail('a 204 for something other than a preflight', spec, status, body);
    return;
  }

  // A post without JavaScript refused for its origin gets the one page in words, not JSON (docs/contract.md "POST /api/subscribe").
  if (status === 403 && /^text\/html\b/.test(response.headers.get('content-type') ?? '')) {
    if (!/^(application\/x-www-form-urlencoded|multipart\/form-data)\b/i.test(request.headers.get('content-type')?.trim() ?? '')) {
      fail('an HTML answer to a request that is not a form post', spec, status, body);
    }
    if (!body.includes('<h1>Subscription not sent</h1>')) fail('a 403 page other than the refused-origin one', spec, status, body);
    if (response.headers.get('cache-control') !== 'no-store') fail('a refusal without Cache-Control: no-store', spec, status, body);
    if (callsMade.length > 0) fail(`${callsMade.length} upstream call(s) for a refused origin`, spec, status, body);
    return;
  }
  if (!/^application\/json\b/.test(response.headers.get('content-type') ?? '')) {
    fail(`content-type ${response.headers.get('content-type')}`, spec, status, body);
  }
  if (method === 'HEAD') {
    if (body !== '') fail('HEAD with a body', spec, status, body);
    const unknownSlug = status === 404 && /^\/api\/issues\/[A-Za-z0-9_-]+$/.test(new URL(request.url).pathname);
    if (status >= 400 && callsMade.length > 0 && !unknownSlug) fail('upstream call(s) for a rejected HEAD', spec, status, body);
    return;
  }
  const envelope = parseEnvelope(body);
  if (!envelope) fail('not the JSON envelope', spec, status, body);
  if (envelope.ok) {
    if (status !== 200) fail(`a success envelope with status ${status}`, spec, status, body);
  } else {
    if (ERROR_STATUS[envelope.error.code] !== status) fail(`${envelope.error.code} sent with status ${status}`, spec, status, body);
    if (response.headers.get('cache-control') !== 'no-store') fail('an error without Cache-Control: no-store', spec, status, body);
    if (status === 405 && !response.headers.get('allow')) fail('a 405 without Allow', spec, status, body);
    if ((status === 429 || status === 503) && !response.headers.get('retry-after'))
      fail(`a ${status} without Retry-After`, spec, status, body);
    if (callsMade.length > 0 && !isUpstreamNotFound(spec, envelope)) {
      fail(`${callsMade.length} upstream call(s) for input that was rejected with ${envelope.error.code}`, spec, status, body);
    }
  }
  for (const call of callsMade) checkUpstreamCall(call, spec, status, body);
}

/** Whatever the visitor sent, the upstream sees our key, our fields and none of the visitor's headers. */
function checkUpstreamCall(call: RecordedCall, spec: RequestSpec, status: number, body: string): void {
  if (call.headers.get('authorization') !== `Bearer ${LEAK_API_KEY}`) fail('an upstream call without our key', spec, status, body);
  for (const name of ['cookie', 'origin', 'referer', 'x-forwarded-for', 'x-fuzz']) {
    if (call.headers.has(name)) fail(`the visitor's ${name} header was passed upstream`, spec, status, body);
  }
  if (!call.url.href.startsWith('https://newsletter.test/v1/newsletter/')) fail(`an upstream call to ${call.url.href}`, spec, status, body);
  if (call.method === 'POST') {
    const sent = JSON.parse(call.body ?? '{}') as Record<string, unknown>;
    for (const key of Object.keys(sent))
      if (!SUBSCRIBE_FORWARDED_KEYS.has(key)) fail(`the client's field ${key} was forwarded`, spec, status, body);
    if (sent.sourceType !== 'embed' || sent.optInAttestation !== true || typeof sent.email !== 'string') {
      fail(`a subscriber was created from ${call.body}`, spec, status, body);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Arbitraries.
// ---------------------------------------------------------------------------------------------

const POLLUTION_KEYS = ['__proto__', 'constructor', 'prototype'];

/** Path segments a scanner tries: traversal, encodings, NUL, odd Unicode, near-miss slugs. */
const hostileSegment = fc.oneof(
  fc.constantFrom(
    'api',
    'issues',
    'categories',
    'subscribe',
    '..',
    '.',
    '',
    '%2e%2e',
    '%2E%2E',
    '.%2e',
    '%2F',
    '%2f..%2f',
    '%00',
    'a%00b',
    '%',
    '%zz',
    '%E0%A4%A',
    '%C0%AF',
    '%FF',
    '..%2F',
    '%252e%252e',
    '%5C',
    '\\',
    ';',
    'a;b=c',
    '@evil.example',
    'http:',
    '//evil.example',
    'first-light',
    'missing-one',
    '%F0%9F%92%A9',
    '💩',
    '%20',
    'a b',
    'first-light.json',
    'first-light/',
    '-lead',
    'trail-',
    'x'.repeat(200),
    'x'.repeat(201),
    'by-slug',
    '%3Fq',
    '%23frag',
    '%0d%0aSet-Cookie:x=1',
    ...POLLUTION_KEYS,
  ),
  fc.string({ maxLength: 24 }),
  fc.string({ unit: 'grapheme', maxLength: 12 }),
  fc.string({ unit: 'binary', maxLength: 12 }).map((text) => encodeURIComponent(text.replace(/[\uD800-\uDFFF]/g, ''))),
  fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_-]{0,40}[A-Za-z0-9]$/),
);

const anyPath = fc.oneof(
  fc.array(hostileSegment, { maxLength: 6 }).map((segments) => `/${segments.join('/')}`),
  fc
    .tuple(
      fc.constantFrom('/api/issues/', '/api/', '/api/issues', '/api/categories/', '/api/subscribe/', '/API/issues/', '/api//issues/'),
      hostileSegment,
    )
    .map(([prefix, segment]) => prefix + segment),
  fc.constantFrom(
    ...PUBLIC_PATHS,
    '/api/issues/first-light',
    '/',
    '/api',
    '/v1/newsletter/issues',
    '/api/issues/..%2f..%2fv1%2fnewsletter%2fsubscribers',
  ),
  fc.integer({ min: 1_000, max: 20_000 }).map((length) => `/api/issues/${'a'.repeat(length)}`),
);

const anyMethod = fc.constantFrom(
  'GET',
  'HEAD',
  'POST',
  'PUT',
  'PATCH',
  'DELETE',
  'OPTIONS',
  'get',
  'post',
  'head',
  'PROPFIND',
  'FOO',
  'M-SEARCH',
  'QUERY',
);

const queryValue = fc.oneof(
  fc.constantFrom(
    '',
    '0',
    '1',
    '20',
    '100',
    '101',
    '-1',
    '1e3',
    '0x10',
    ' 5',
    '5 ',
    '１',
    '9'.repeat(20),
    'NaN',
    'Infinity',
    '%00',
    '%',
    'essays',
    'ESSAYS',
    '..',
    'a&b=c',
  ),
  fc.string({ maxLength: 20 }).map(encodeURIComponent),
  fc.nat({ max: 10_000_000 }).map(String),
);
const queryKey = fc.oneof(
  fc.constantFrom(
    'limit',
    'offset',
    'category',
    'limit[]',
    'offset[0]',
    '__proto__',
    '__proto__[limit]',
    'constructor[prototype][polluted]',
    'toString',
    'hasOwnProperty',
    'utm_source',
  ),
  fc.string({ maxLength: 12 }).map(encodeURIComponent),
);
const queryString = fc
  .array(fc.tuple(queryKey, fc.option(queryValue, { nil: undefined })), { maxLength: 6 })
  .map((pairs) => (pairs.length === 0 ? '' : `?${pairs.map(([key, value]) => (value === undefined ? key : `${key}=${value}`)).join('&')}`));

const oddOrigin = fc.constantFrom(
  ALLOWED_ORIGIN,
  OWN_ORIGIN,
  'null',
  'https://evil.example',
  'https://site.example.evil.example',
  'https://site.example:443',
  'HTTPS://SITE.EXAMPLE',
  'file://',
  '*',
  'https://site.example/',
  'https://xn--sit-example.test',
  ' https://site.example',
);
const contentType = fc.oneof(
  fc.constantFrom(
    'application/json',
    'application/json; charset=utf-8',
    'APPLICATION/JSON',
    'application/json;charset=utf-16',
    'application/x-www-form-urlencoded',
    'multipart/form-data',
    'multipart/form-data; boundary=fuzzboundary',
    'text/plain',
    'text/html',
    'application/xml',
    'application/json;;',
    ';',
    'application/jsonp',
    'application/json, text/plain',
    'application/merge-patch+json',
    'multipart/form-data; boundary=',
    'application/x-www-form-urlencoded; charset=iso-8859-1',
  ),
  fc.string({ maxLength: 30 }),
);
/** Header values, including CR/LF and NUL attempts (the Request API refuses those; we try anyway). */
const headerValue = fc.oneof(
  { weight: 6, arbitrary: fc.string({ maxLength: 40 }) },
  {
    weight: 2,
    arbitrary: fc.string({ unit: fc.integer({ min: 0x20, max: 0xff }).map((code) => String.fromCharCode(code)), maxLength: 40 }),
  },
  { weight: 1, arbitrary: fc.constantFrom('a\r\nSet-Cookie: injected=1', 'a\nX-Injected: 1', 'a\rb', 'a\u0000b') },
  { weight: 1, arbitrary: fc.integer({ min: 8_000, max: 64_000 }).map((length) => 'h'.repeat(length)) },
);
const headerName = fc.oneof(
  fc.constantFrom(
    'Origin',
    'Content-Type',
    'Accept',
    'If-None-Match',
    'X-Forwarded-For',
    'Referer',
    'Cookie',
    'Authorization',
    'X-Http-Method-Override',
    'Access-Control-Request-Method',
    'Access-Control-Request-Headers',
    'X-Fuzz',
    'Accept-Encoding',
    'Cache-Control',
    'Pragma',
    'Range',
    'X-Request-Id',
    'Forwarded',
  ),
  fc.stringMatching(/^[A-Za-z][A-Za-z0-9-]{0,20}$/),
);
const specificHeader = fc.oneof(
  oddOrigin.map((value): [string, string] => ['Origin', value]),
  contentType.map((value): [string, string] => ['Content-Type', value]),
  fc.constantFrom('application/json', 'text/html', '*/*', 'application/json;q=0', '').map((value): [string, string] => ['Accept', value]),
  fc.constantFrom('*', '"x"', 'W/"x"', '"a", "b"', ',', 'W/').map((value): [string, string] => ['If-None-Match', value]),
  fc
    .constantFrom('https://site.example/page?x=1', 'https://evil.example/', `${OWN_ORIGIN}/form`, 'javascript:alert(1)', 'not a url')
    .map((value): [string, string] => ['Referer', value]),
);
const anyHeaders = fc.array(fc.oneof(specificHeader, fc.tuple(headerName, headerValue)), { maxLength: 6 });
/** Half of the subscribe cases carry no odd header, so the body alone decides. */
const fewHeaders = fc.oneof(fc.constant<[string, string][]>([]), anyHeaders);

/** A JSON object's text with a chosen key order, so `__proto__` can be an own key of the text. */
function objectText(entries: [string, unknown][]): string {
  return `{${entries
    .filter(([, value]) => value !== undefined)
    .map(([key, value]) => `${JSON.stringify(key)}:${JSON.stringify(value)}`)
    .join(',')}}`;
}

/** Addresses of the everyday shape (zod's email rule is stricter than RFC 5322, as a form's should be). */
const everydayEmail = fc.stringMatching(/^[a-z0-9](?:[a-z0-9_+-]{0,10}\.)?[a-z0-9_+-]{0,10}[a-z0-9]@[a-z0-9][a-z0-9-]{0,15}\.[a-z]{2,6}$/);

const emailValue = fc.oneof(
  { weight: 3, arbitrary: everydayEmail },
  // RFC 5322 allows `{|}~` and more; the service may refuse them, but only with a 422.
  { weight: 2, arbitrary: fc.emailAddress() },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      'jane@example.com',
      ' jane@example.com ',
      'JANE@EXAMPLE.COM',
      'jane@example.com\r\nBcc: x@evil.example',
      'jane\u0000@example.com',
      'not-an-email',
      '@example.com',
      'jane@',
      '',
      ' ',
      `${'a'.repeat(250)}@example.com`,
      'jane@example.com,bob@example.com',
      'jane@[127.0.0.1]',
      '"quoted"@example.com',
      'jäne@exämple.com',
    ),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 40 }) },
  { weight: 1, arbitrary: fc.constantFrom<unknown>(null, 1, true, [], {}, ['jane@example.com'], { email: 'jane@example.com' }) },
);
const attestationValue = fc.constantFrom<unknown>(
  true,
  'true',
  'on',
  '1',
  'yes',
  'YES',
  ' on ',
  false,
  'false',
  'off',
  0,
  1,
  null,
  [],
  {},
  'tru',
  undefined,
);
const subscribeFields = fc.record(
  {
    email: emailValue,
    optInAttestation: attestationValue,
    source: fc.oneof(fc.string({ maxLength: 170 }), fc.constantFrom<unknown>('', 'newsletter\r\npage', 42, null)),
    sourcePlatform: fc.constantFrom<unknown>('x', 'linkedin', 'X', 'facebook', '', null, 1),
    website: fc.constantFrom<unknown>('', ' ', 'https://spam.example', 0, null),
    sourceType: fc.constantFrom<unknown>('import', 'api', 'embed'),
    extra: fc.constantFrom<unknown>('ignored', { nested: true }),
  },
  { requiredKeys: [] },
);
/** A subscription a real form would send, so the forwarding path is exercised as much as the refusals. */
const plausibleFields = fc.record(
  {
    email: everydayEmail,
    optInAttestation: fc.constantFrom<unknown>(true, 'on', 'true', '1', 'yes'),
    source: fc.option(fc.stringMatching(/^[a-z][a-z -]{0,30}$/), { nil: undefined }),
    sourcePlatform: fc.option(fc.constantFrom('x', 'linkedin'), { nil: undefined }),
    website: fc.option(fc.constantFrom('', 'https://spam.example'), { nil: undefined }),
  },
  { requiredKeys: ['email', 'optInAttestation'] },
);

/** Prototype-pollution payloads: `__proto__`, `constructor.prototype`, in JSON and form shapes. */
const pollutionEntries = fc.array(
  fc.tuple(
    fc.constantFrom(...POLLUTION_KEYS),
    fc.constantFrom<unknown>(
      { polluted: 'yes', optInAttestation: true, email: 'proto@example.com' },
      { prototype: { polluted: 'yes' } },
      'yes',
      null,
      [],
    ),
  ),
  { minLength: 1, maxLength: 3 },
);

function formText(entries: [string, unknown][]): string {
  return entries
    .filter(([, value]) => value !== undefined)
    .map(([key, value]) => `${encodeURIComponent(key)}=${encodeURIComponent(typeof value === 'string' ? value : JSON.stringify(value))}`)
    .join('&');
}

function multipartText(entries: [string, unknown][], boundary: string): string {
  const parts = entries
    .filter(([, value]) => value !== undefined)
    .map(
      ([key, value]) =>
        `--${boundary}\r\nContent-Disposition: form-data; name="${key.replace(/"/g, '%22')}"\r\n\r\n${typeof value === 'string' ? value : JSON.stringify(value)}\r\n`,
    );
  return `${parts.join('')}--${boundary}--\r\n`;
}

const INVALID_UTF8 = [[0xff], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80], [0xe2, 0x82]];

/** A subscribe body and the content type it claims; the two do not always agree, on purpose. */
/** Mostly plausible submissions, so the forwarding path is exercised as much as the refusals. */
const plausibleBody = fc.oneof(
  fc.tuple(plausibleFields, fc.constantFrom('json', 'form', 'multipart')).map(([fields, encoding]) => {
    const entries = Object.entries(fields);
    if (encoding === 'json') return { type: 'application/json', body: objectText(entries) };
    if (encoding === 'form') return { type: 'application/x-www-form-urlencoded', body: formText(entries) };
    return { type: 'multipart/form-data; boundary=fuzzboundary', body: multipartText(entries, 'fuzzboundary') };
  }),
  fc.tuple(plausibleFields, pollutionEntries).map(([fields, pollution]) => ({
    type: 'application/json',
    body: objectText([...pollution, ...Object.entries(fields)]),
  })),
);

const hostileBody = fc.oneof(
  fc.tuple(subscribeFields, pollutionEntries, fc.boolean()).map(([fields, pollution, pollutionFirst]) => {
    const entries = Object.entries(fields);
    return { type: 'application/json', body: objectText(pollutionFirst ? [...pollution, ...entries] : [...entries, ...pollution]) };
  }),
  subscribeFields.map((fields) => ({ type: 'application/json', body: objectText(Object.entries(fields)) })),
  fc.tuple(subscribeFields, fc.boolean()).map(([fields, pollute]) => ({
    type: 'application/x-www-form-urlencoded',
    body:
      formText(Object.entries(fields)) +
      (pollute ? '&__proto__[polluted]=yes&constructor[prototype][polluted]=yes&__proto__.optInAttestation=on' : ''),
  })),
  subscribeFields.map((fields) => ({
    type: 'multipart/form-data; boundary=fuzzboundary',
    body: multipartText([...Object.entries(fields), ['__proto__', 'yes']], 'fuzzboundary'),
  })),
  fc.json({ maxDepth: 4 }).map((body) => ({ type: 'application/json', body })),
  fc.integer({ min: 1, max: 6_000 }).map((depth) => ({ type: 'application/json', body: '['.repeat(depth) + ']'.repeat(depth) })),
  fc.integer({ min: 1, max: 3_000 }).map((depth) => ({ type: 'application/json', body: `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}` })),
  fc.integer({ min: 8_000, max: 200_000 }).map((length) => ({
    type: 'application/json',
    body: objectText([
      ['email', `${'a'.repeat(length)}@example.com`],
      ['optInAttestation', true],
    ]),
  })),
  fc.constantFrom(8_191, 8_192, 8_193).map((size) => {
    const head = '{"email":"edge@example.com","optInAttestation":true,"source":"';
    return { type: 'application/json', body: `${head}${'s'.repeat(Math.max(0, size - head.length - 2))}"}` };
  }),
  fc
    .tuple(
      fc.constantFrom(...INVALID_UTF8),
      fc.constantFrom('application/json', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=b'),
    )
    .map(([bytes, type]) => ({
      type,
      body: new Uint8Array([
        ...new TextEncoder().encode('{"email":"jane'),
        ...bytes,
        ...new TextEncoder().encode('@example.com","optInAttestation":true}'),
      ]),
    })),
  fc.tuple(fc.uint8Array({ maxLength: 300 }), contentType).map(([body, type]) => ({ type, body })),
  fc
    .tuple(
      fc.string({ maxLength: 300 }),
      fc.constantFrom('multipart/form-data; boundary=fuzzboundary', 'multipart/form-data', 'multipart/form-data; boundary="a b"'),
    )
    .map(([junk, type]) => ({ type, body: `--fuzzboundary\r\n${junk}\r\n--fuzzboundary--` })),
  fc.tuple(fc.string({ maxLength: 200 }), contentType).map(([body, type]) => ({ type, body })),
);

const subscribeBody = fc.oneof({ weight: 1, arbitrary: plausibleBody }, { weight: 2, arbitrary: hostileBody });

// ---------------------------------------------------------------------------------------------
// Properties.
// ---------------------------------------------------------------------------------------------

async function assertProperty<Ts extends [unknown, ...unknown[]]>(property: fc.IAsyncProperty<Ts>, numRuns: number): Promise<void> {
  await fc.assert(property, { seed: SEED, numRuns, endOnFailure: false });
}

describe('fuzzing all four routes with hostile input (fast-check, healthy upstream)', () => {
  beforeAll(() => {
    prototypesBefore = prototypeSnapshot();
  });

  afterAll(() => {
    // Visible in the run's output: how much was actually exercised.
    const statuses = [...stats.byStatus.entries()].sort(([a], [b]) => a - b).map(([status, count]) => `${status}×${count}`);
    process.stdout.write(
      `fuzz: seed ${SEED}, ${stats.cases} requests (+${stats.unrepresentable} the Request API refused), ` +
        `${stats.upstreamCalls} upstream calls; statuses ${statuses.join(' ')}\n`,
    );
  });

  it('answers any method on any path with the envelope and no 5xx, calling the upstream only for valid reads', async () => {
    const target = createFuzzTarget();
    await assertProperty(
      fc.asyncProperty(
        anyMethod,
        anyPath,
        queryString,
        anyHeaders,
        fc.option(subscribeBody, { nil: undefined }),
        async (method, path, query, headers, body) => {
          const withType: [string, string][] = body ? [['Content-Type', body.type], ...headers] : headers;
          await checkOne(target, { method, path: path + query, headers: withType, body: body?.body });
        },
      ),
      runs(1_200),
    );
    for (const line of target.logs.lines) leaks.scan('log', line);
  });

  it('validates every archive query: 422 without an upstream call, or a page of the one cached index', async () => {
    const target = createFuzzTarget();
    await assertProperty(
      fc.asyncProperty(fc.constantFrom('GET', 'HEAD'), queryString, anyHeaders, async (method, query, headers) => {
        await checkOne(target, { method, path: `/api/issues${query}`, headers });
      }),
      runs(800),
    );
    // However many distinct queries, the archive was read from the upstream once: its short page
    // and the empty page that proves the end.
    expect(target.calls.filter((call) => call.url.pathname === '/v1/newsletter/issues')).toHaveLength(2);
    for (const line of target.logs.lines) leaks.scan('log', line);
  });

  it('rejects every slug outside the pattern with 422 and no upstream call', async () => {
    const target = createFuzzTarget();
    const warmed = await target.app.request('/api/issues/first-light');
    const etag = warmed.headers.get('etag') ?? '"none"';
    await assertProperty(
      fc.asyncProperty(
        fc.constantFrom('GET', 'HEAD', 'OPTIONS', 'POST', 'DELETE'),
        hostileSegment,
        fc.option(fc.constantFrom(...hostileSuffixes()), { nil: '' }),
        anyHeaders,
        fc.boolean(),
        async (method, slug, suffix, headers, revalidate) => {
          const extra: [string, string][] = revalidate ? [['If-None-Match', etag]] : [];
          await checkOne(target, { method, path: `/api/issues/${slug}${suffix}`, headers: [...extra, ...headers] });
        },
      ),
      runs(800),
    );
    for (const line of target.logs.lines) leaks.scan('log', line);
  });

  it('answers the categories route the same whatever else the request carries', async () => {
    const target = createFuzzTarget();
    await assertProperty(
      fc.asyncProperty(
        fc.constantFrom('GET', 'HEAD', 'OPTIONS', 'POST', 'PUT'),
        queryString,
        anyHeaders,
        async (method, query, headers) => {
          await checkOne(target, { method, path: `/api/categories${query}`, headers });
        },
      ),
      runs(300),
    );
    expect(target.calls.filter((call) => call.url.pathname === '/v1/newsletter/categories')).toHaveLength(1);
    for (const line of target.logs.lines) leaks.scan('log', line);
  });

  it('subscribes only with a valid address and a true attestation, forwards only known fields, and never errors with 5xx', async () => {
    const target = createFuzzTarget();
    await assertProperty(
      fc.asyncProperty(subscribeBody, fewHeaders, fc.constantFrom('POST', 'post'), async (body, headers, method) => {
        // The body's own type first; a fuzzed Content-Type among the headers may join or contradict it.
        await checkOne(target, { method, path: '/api/subscribe', headers: [['Content-Type', body.type], ...headers], body: body.body });
      }),
      runs(1_500),
    );
    // The forwarding path itself was exercised, not only the refusals.
    expect(target.calls.filter((call) => call.method === 'POST').length).toBeGreaterThan(50);
    for (const line of target.logs.lines) leaks.scan('log', line);
  });

  it('leaves Object.prototype and the other built-in prototypes untouched', () => {
    expect(prototypeSnapshot()).toBe(prototypesBefore);
    const probe: Record<string, unknown> = {};
    for (const key of ['polluted', 'optInAttestation', 'email', 'prototype']) expect(probe[key]).toBeUndefined();
  });

  it('leaks no key, internal field, upstream header or stack trace in any response or log line', () => {
    expect(leaks.scanned()).toBeGreaterThan(1_000);
    expect(leaks.findings()).toEqual([]);
  });

  it('exercised the service: almost every generated request was one the Request API accepts', () => {
    expect(stats.cases).toBeGreaterThan(0.8 * (stats.cases + stats.unrepresentable));
    expect(stats.upstreamCalls).toBeGreaterThan(0);
  });
});

function hostileSuffixes(): string[] {
  return ['/', '/..', '/%2e%2e/categories', '?x=1', '#frag', '.', '%00', '/extra', ';jsessionid=1'];
}
