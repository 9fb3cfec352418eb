import { expect } from 'vitest';
import { createUpstreamClient, type UpstreamClientOptions } from '../../src/core/upstream/newsletter-api.js';
import type { CreateSubscriberBody } from '../../src/core/upstream/schemas.js';
import { UpstreamError } from '../../src/core/upstream/transport.js';
import { createFakeClock, createScriptedFetch, jsonResponse, TEST_API_KEY, TEST_BASE_URL, type FetchHandler } from '../helpers.js';

/* Upstream answers and failures shared by the upstream client's suites. */

export const ACCOUNT_SET_ID = '3b9d2c4e-8f1a-4c6b-9e2d-5a7f0c1b8e34';
/** A sentence only the upstream says; it must never surface in one of our errors. */
export const UPSTREAM_SENTENCE = 'The purple walrus refuses workspace ws_secret_991 today';

/** An issue record with every documented field, as the upstream would send it. */
export function upstreamIssue(n: number, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: `iss_${String(n).padStart(4, '0')}`,
    slug: `issue-${n}`,
    workspaceId: 'ws_1',
    accountSetId: ACCOUNT_SET_ID,
    subject: `Issue ${n}`,
    previewText: null,
    thumbnailUrl: null,
    contentHtml: `<p>Issue ${n}</p>`,
    contentJson: null,
    scheduledFor: null,
    audience: null,
    status: 'sent',
    isPublic: true,
    category: null,
    categories: [],
    stats: {
      newSubscriberCount: 0,
      subscriberCountTargeted: 10,
      sentCount: 10,
      deliveredCount: 10,
      openedCount: 5,
      clickedCount: 1,
      bouncedCount: 0,
      complainedCount: 0,
      failedCount: 0,
    },
    createdBy: 'user_1',
    sentAt: '2026-01-04T09:00:00.000Z',
    createdAt: '2026-01-01T09:00:00.000Z',
    updatedAt: '2026-01-04T08:00:00.000Z',
    ...overrides,
  };
}

export function upstreamCategory(slug: string, name: string): Record<string, unknown> {
  return {
    id: `cat_${slug}`,
    workspaceId: 'ws_1',
    accountSetId: ACCOUNT_SET_ID,
    name,
    slug,
    createdAt: '2026-01-01T00:00:00.000Z',
    updatedAt: '2026-01-01T00:00:00.000Z',
  };
}

export const SUBSCRIBER_BODY: CreateSubscriberBody = {
  email: 'reader@example.com',
  optInAttestation: true,
  sourceType: 'embed',
  source: 'website',
};

export function errorBody(code: string, message = UPSTREAM_SENTENCE) {
  return { ok: false, error: { code, message } };
}

/**
 * The seams every upstream suite injects: a scripted fetch, a fake clock, jitter fixed at half,
 * and sleeps that only record their delay.
 */
export function createTestSeams(handler: FetchHandler) {
  const clock = createFakeClock();
  const sleeps: number[] = [];
  const scripted = createScriptedFetch(handler);
  const options = {
    timeoutMs: 5000,
    fetch: scripted.fetch,
    random: () => 0.5,
    sleep: async (ms: number) => {
      sleeps.push(ms);
    },
    now: clock.now,
  };
  return { options, calls: scripted.calls, sleeps, clock };
}

/** The real client over the test seams. */
export function setupClient(handler: FetchHandler, overrides: Partial<UpstreamClientOptions> = {}) {
  const { options, ...seams } = createTestSeams(handler);
  const client = createUpstreamClient({ baseUrl: TEST_BASE_URL, apiKey: TEST_API_KEY, ...options, ...overrides });
  return { client, ...seams };
}

/** The issues of the first List Issues page, read as the archive refresh reads the newest rows (one page, pages of 10). */
export async function firstListPage(client: ReturnType<typeof setupClient>['client']) {
  const head = await client.readPublicArchiveHead!({ isKnownId: () => false, reduceRow: (row) => row, order: 'sent' });
  return head.issues;
}

/** Awaits a promise that must reject with an UpstreamError, and returns that error. */
export async function failureOf(promise: Promise<unknown>): Promise<UpstreamError> {
  const outcome = await promise.then(
    (value) => ({ rejected: false as const, value }),
    (error: unknown) => ({ rejected: true as const, error }),
  );
  if (!outcome.rejected) throw new Error(`expected an UpstreamError, got a result: ${JSON.stringify(outcome.value)}`);
  expect(outcome.error).toBeInstanceOf(UpstreamError);
  return outcome.error as UpstreamError;
}

export const categoriesOk = () => jsonResponse({ ok: true, data: [upstreamCategory('guides', 'Guides')] });

export function timeoutError(): DOMException {
  return new DOMException('The operation was aborted due to timeout', 'TimeoutError');
}

export function connectionReset(): TypeError {
  const cause = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
  return new TypeError('fetch failed', { cause });
}
