import { readFileSync } from 'node:fs';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { afterAll, afterEach, expect } from 'vitest';
import { createOpenApiValidator } from './openapi-validator.js';
import { installResponseObserver } from './response-observer.js';

/**
 * Setup file of the `node` project: every response of an app built by `createTestApp` is
 * checked against openapi.json, and a test whose responses depart from it fails with the list.
 * So the document cannot drift from what the suites see the service answer.
 */
const document = JSON.parse(readFileSync(new URL('../../openapi.json', import.meta.url), 'utf8')) as Record<string, unknown>;
const check = createOpenApiValidator(document);
let problems: string[] = [];

/** The body as it is, whatever content coding it was sent in (openapi.json describes the decoded content). */
function decodedBody(response: Response, body: string, bytes: Uint8Array): string {
  const coding = response.headers.get('content-encoding');
  if (coding === 'br') return brotliDecompressSync(bytes).toString();
  if (coding === 'gzip') return gunzipSync(bytes).toString();
  return body;
}

installResponseObserver((request, response, encoded, bytes) => {
  const { pathname } = new URL(request.url);
  const body = decodedBody(response, encoded, bytes);
  for (const problem of check({ method: request.method, url: request.url, status: response.status, headers: response.headers, body })) {
    problems.push(`${request.method} ${pathname} → ${response.status}: ${problem}`);
  }
});

function expectConformingResponses() {
  const found = problems;
  problems = [];
  expect(found, 'responses that openapi.json does not describe').toEqual([]);
}

afterEach(expectConformingResponses);
afterAll(expectConformingResponses);
