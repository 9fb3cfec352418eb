import { readFileSync } from 'node:fs';
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
/** Reading a body is bounded: our bodies are strings, so a stall is a bug to report, not to wait on. */
const BODY_READ_LIMIT_MS = 5_000;

let pending: Promise<string[]>[] = [];

installResponseObserver((request, response) => {
  pending.push(
    Promise.race([
      response.text().then((body) => {
        const problems = check({ method: request.method, url: request.url, status: response.status, headers: response.headers, body });
        return problems.map((problem) => `${request.method} ${new URL(request.url).pathname} → ${response.status}: ${problem}`);
      }),
      new Promise<string[]>((resolve) => setTimeout(() => resolve([`${request.method} ${request.url}: body not read within ${BODY_READ_LIMIT_MS} ms`]), BODY_READ_LIMIT_MS).unref()),
    ]),
  );
});

async function expectConformingResponses() {
  const checks = pending;
  pending = [];
  const problems = (await Promise.all(checks)).flat();
  expect(problems, 'responses that openapi.json does not describe').toEqual([]);
}

afterEach(expectConformingResponses);
afterAll(expectConformingResponses);
