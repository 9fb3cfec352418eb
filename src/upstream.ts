import type * as z from 'zod/mini';
import {
  CategoryListEnvelope,
  IssueEnvelope,
  IssueListEnvelope,
  SubscriberEnvelope,
  UpstreamErrorBodySchema,
  type CreateSubscriberBody,
  type UpstreamCategory,
  type UpstreamIssue,
  type UpstreamSubscriber,
} from './upstream-schemas.js';

// ---------------------------------------------------------------------------
// Assumptions about the upstream. upstream-api.md marks these facts "not shown";
// each is the conventional choice, kept here so it is a one-line change when the
// truth is known, and listed in the README under "Assumptions about the upstream".
// ---------------------------------------------------------------------------

/** Name of List Issues' maximum-rows parameter. */
export const LIST_ISSUES_LIMIT_PARAM = 'limit';
/** List Issues' documented maximum of rows per call. */
export const LIST_ISSUES_MAX_ROWS = 200;
/** Name of List Issues' paging parameter; List Subscribers documents an offset, so we assume the same. */
export const LIST_ISSUES_OFFSET_PARAM = 'offset';
/** HTTP status of the NOT_FOUND error; the code NOT_FOUND is recognised at any 4xx status too. */
export const NOT_FOUND_STATUS = 404;
/** Success statuses other than Create Issue's 201 are not shown; any 2xx is accepted. */
export const isSuccessStatus = (status: number): boolean => status >= 200 && status < 300;
/** How long to hold off after a 429 that carries no usable `Retry-After`. */
export const DEFAULT_RETRY_AFTER_SECONDS = 30;
/** A longer `Retry-After` is capped, so one odd header cannot silence the site for a day. */
export const MAX_RETRY_AFTER_SECONDS = 600;

/** The pattern every public slug must match (PRODUCT.md "GET /api/issues/:slug"). */
export const SLUG_PATTERN = /^[A-Za-z0-9](?:[A-Za-z0-9_-]{0,198}[A-Za-z0-9])?$/;

/** How an upstream call failed; the routes map each kind to one of PRODUCT.md's codes. */
export type UpstreamErrorKind =
  | 'auth'
  | 'not_found'
  | 'validation'
  | 'rate_limited'
  | 'timeout'
  | 'unavailable'
  | 'refused'
  | 'bad_response';

/**
 * The one error of the upstream client. Its message is our own wording: the upstream's text,
 * headers and the API key never reach it.
 */
export class UpstreamError extends Error {
  readonly kind: UpstreamErrorKind;
  readonly status: number | undefined;
  readonly retryAfterSeconds: number | undefined;
  /** The upstream's error code when it matched `^[A-Z][A-Z0-9_]{0,63}$`, for logs only. */
  readonly upstreamCode: string | undefined;

  constructor(
    kind: UpstreamErrorKind,
    message: string,
    options: { status?: number; retryAfterSeconds?: number; upstreamCode?: string; cause?: unknown } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = 'UpstreamError';
    this.kind = kind;
    this.status = options.status;
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.upstreamCode = options.upstreamCode;
  }
}

export interface UpstreamClientOptions {
  /** Root ending in `/v1`, as validated by parseConfig. */
  baseUrl: string;
  apiKey: string;
  timeoutMs: number;
  fetch?: typeof globalThis.fetch;
  /** Bodies above this are refused before they are buffered. */
  maxResponseBytes?: number;
  /** Retries after the first attempt, for GETs (PRODUCT.md: small budget). */
  getRetries?: number;
  /** Create Subscriber creates or resubscribes, so one repeat after a 5xx or a reset is safe. */
  postRetries?: number;
  baseDelayMs?: number;
  maxDelayMs?: number;
  random?: () => number;
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
}

export interface ListIssuesQuery {
  status: 'draft' | 'sending' | 'sent' | 'failed';
  isPublic: boolean;
  limit: number;
  offset: number;
}

/** The four upstream operations a public site needs, and nothing else. */
export interface UpstreamClient {
  listIssues(query: ListIssuesQuery): Promise<UpstreamIssue[]>;
  /** Reads the whole public archive page by page (see `readWholeArchive`). */
  listAllPublicIssues(maxIssues: number): Promise<UpstreamIssue[]>;
  getIssueBySlug(slug: string): Promise<UpstreamIssue>;
  listCategories(): Promise<UpstreamCategory[]>;
  createSubscriber(body: CreateSubscriberBody): Promise<UpstreamSubscriber>;
}

// Retried: a gateway's or the service's transient failure. 501 and 505 will not get better.
const RETRYABLE_STATUSES = new Set([500, 502, 503, 504]);

const defaultSleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Builds upstream URLs under `baseUrl`: each segment is percent-encoded, and the finished URL
 * must be exactly the path we meant, under the configured base, or the call is refused.
 */
export function createUpstreamUrlBuilder(baseUrl: string) {
  const base = new URL(baseUrl);
  const basePath = base.pathname.replace(/\/+$/, '');

  return function buildUpstreamUrl(segments: readonly string[], query?: Record<string, string>): URL {
    // An empty segment stays under the base yet asks for a path we never meant (`by-slug/`).
    if (segments.includes('')) {
      throw new UpstreamError('validation', 'refused to build an upstream path with an empty segment');
    }
    const expectedPath = `${basePath}/${segments.map(encodeURIComponent).join('/')}`;
    const url = new URL(base.origin + expectedPath);
    // The URL parser is the judge of what a path means: if it resolved a dot segment or moved to
    // another origin, a slug could walk to another upstream operation or host, so refuse. This
    // is the one check for `.` and `..` (encodeURIComponent leaves them as they are).
    if (url.origin !== base.origin || url.pathname !== expectedPath) {
      throw new UpstreamError('validation', 'refused an upstream URL outside the configured base path');
    }
    for (const [name, value] of Object.entries(query ?? {})) url.searchParams.set(name, value);
    return url;
  };
}

/** Creates the only code that talks to the newsletter service. */
export function createUpstreamClient(options: UpstreamClientOptions): UpstreamClient {
  const {
    apiKey,
    timeoutMs,
    fetch: fetchImpl = globalThis.fetch.bind(globalThis),
    maxResponseBytes = 16 * 1024 * 1024,
    getRetries = 2,
    postRetries = 1,
    baseDelayMs = 100,
    maxDelayMs = 1000,
    random = Math.random,
    sleep = defaultSleep,
    now = Date.now,
  } = options;
  const buildUrl = createUpstreamUrlBuilder(options.baseUrl);
  const authorization = `Bearer ${apiKey}`;
  // After a 429 we hold off every call until Retry-After has passed: honoured, not hammered.
  let blockedUntil = 0;

  async function call<T>(
    method: 'GET' | 'POST',
    url: URL,
    schema: z.ZodMiniType<{ ok: true; data: T }>,
    body?: unknown,
  ): Promise<T> {
    const retries = method === 'GET' ? getRetries : postRetries;
    for (let attempt = 0; ; attempt += 1) {
      try {
        return await attemptOnce(method, url, schema, body);
      } catch (error) {
        const retryable =
          error instanceof UpstreamError &&
          error.kind === 'unavailable' &&
          attempt < retries;
        if (!retryable) throw error;
        // Exponential backoff with full jitter (spreads retries of many instances apart).
        const ceiling = Math.min(maxDelayMs, baseDelayMs * 2 ** attempt);
        await sleep(Math.round(random() * ceiling));
      }
    }
  }

  async function attemptOnce<T>(
    method: 'GET' | 'POST',
    url: URL,
    schema: z.ZodMiniType<{ ok: true; data: T }>,
    body: unknown,
  ): Promise<T> {
    const waitMs = blockedUntil - now();
    if (waitMs > 0) {
      throw new UpstreamError('rate_limited', 'holding off after the upstream asked us to slow down', {
        retryAfterSeconds: Math.ceil(waitMs / 1000),
      });
    }
    // Built from scratch on every call: no header of the visitor's request is ever passed on.
    const headers: Record<string, string> = { Authorization: authorization, Accept: 'application/json' };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const signal = AbortSignal.timeout(timeoutMs);
    let response: Response;
    try {
      response = await fetchImpl(url, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal,
        // 'manual', not 'follow': a redirect must never carry the key to another host.
        // ('error' would say the same, but Workers' fetch does not accept it.)
        redirect: 'manual',
      });
    } catch (error) {
      throw transportError(error);
    }

    const { status } = response;
    if (status >= 300 && status < 400) {
      await discard(response);
      throw new UpstreamError('bad_response', `upstream answered with a redirect (${status}); not followed`, { status });
    }
    if (isSuccessStatus(status)) {
      const parsed = schema.safeParse(await readJson(response, status));
      if (!parsed.success) {
        throw new UpstreamError('bad_response', `upstream ${status} body does not match the expected shape`, {
          status,
          cause: parsed.error,
        });
      }
      return parsed.data.data;
    }
    throw await failureFromResponse(response);
  }

  async function failureFromResponse(response: Response): Promise<UpstreamError> {
    const { status } = response;
    let upstreamCode: string | undefined;
    try {
      const errorBody = UpstreamErrorBodySchema.safeParse(await readJson(response, status));
      const code = errorBody.success ? errorBody.data.error.code : undefined;
      upstreamCode = code && /^[A-Z][A-Z0-9_]{0,63}$/.test(code) ? code : undefined;
    } catch {
      // The status alone decides the kind; an unreadable error body changes nothing.
    }
    const details = { status, upstreamCode };
    // Only 401 is documented for a missing or invalid key. A 403 (permission scopes are not
    // shown) is a refusal like any other 4xx, so subscribe cannot reveal who is on the list.
    if (status === 401) return new UpstreamError('auth', 'upstream rejected the API key (401)', details);
    if (status === NOT_FOUND_STATUS || (status < 500 && upstreamCode === 'NOT_FOUND')) {
      return new UpstreamError('not_found', `upstream answered not found (${status})`, details);
    }
    if (status === 422) return new UpstreamError('validation', 'upstream rejected the request as invalid (422)', details);
    if (status === 429) {
      const retryAfterSeconds = Math.min(
        MAX_RETRY_AFTER_SECONDS,
        parseRetryAfter(response.headers.get('retry-after'), now()) ?? DEFAULT_RETRY_AFTER_SECONDS,
      );
      blockedUntil = Math.max(blockedUntil, now() + retryAfterSeconds * 1000);
      return new UpstreamError('rate_limited', 'upstream asked us to slow down (429)', { ...details, retryAfterSeconds });
    }
    if (RETRYABLE_STATUSES.has(status)) return new UpstreamError('unavailable', `upstream failed (${status})`, details);
    if (status >= 500) return new UpstreamError('bad_response', `upstream failed (${status})`, details);
    return new UpstreamError('refused', `upstream refused the request (${status})`, details);
  }

  async function readJson(response: Response, status: number): Promise<unknown> {
    const text = await readCapped(response, status);
    try {
      return JSON.parse(text);
    } catch (error) {
      throw new UpstreamError('bad_response', `upstream ${status} body is not JSON`, { status, cause: error });
    }
  }

  async function readCapped(response: Response, status: number): Promise<string> {
    const declared = Number(response.headers.get('content-length') ?? Number.NaN);
    const tooLarge = () =>
      new UpstreamError('bad_response', `upstream ${status} body exceeds ${maxResponseBytes} bytes`, { status });
    if (declared > maxResponseBytes) {
      await discard(response);
      throw tooLarge();
    }
    if (!response.body) return '';
    const reader = response.body.getReader();
    const chunks: Uint8Array[] = [];
    let total = 0;
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        total += value.byteLength;
        if (total > maxResponseBytes) {
          await reader.cancel().catch(() => undefined);
          throw tooLarge();
        }
        chunks.push(value);
      }
    } catch (error) {
      if (error instanceof UpstreamError) throw error;
      throw transportError(error);
    }
    const bytes = new Uint8Array(total);
    let offset = 0;
    for (const chunk of chunks) {
      bytes.set(chunk, offset);
      offset += chunk.byteLength;
    }
    try {
      return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    } catch (error) {
      throw new UpstreamError('bad_response', `upstream ${status} body is not valid UTF-8`, { status, cause: error });
    }
  }

  function transportError(error: unknown): UpstreamError {
    const name = error instanceof Error ? error.name : '';
    if (name === 'TimeoutError' || name === 'AbortError') {
      return new UpstreamError('timeout', `upstream did not answer within ${timeoutMs} ms`, {
        retryAfterSeconds: 5,
        cause: error,
      });
    }
    return new UpstreamError('unavailable', 'could not reach the upstream', { cause: error });
  }

  function listIssues(query: ListIssuesQuery): Promise<UpstreamIssue[]> {
    const url = buildUrl(['newsletter', 'issues'], {
      status: query.status,
      isPublic: String(query.isPublic),
      [LIST_ISSUES_LIMIT_PARAM]: String(query.limit),
      [LIST_ISSUES_OFFSET_PARAM]: String(query.offset),
    });
    return call('GET', url, IssueListEnvelope);
  }

  return {
    listIssues,
    listAllPublicIssues: (maxIssues) => readWholeArchive(listIssues, maxIssues),
    getIssueBySlug(slug) {
      if (!SLUG_PATTERN.test(slug)) {
        return Promise.reject(new UpstreamError('validation', 'refused to request an issue with an invalid slug'));
      }
      return call('GET', buildUrl(['newsletter', 'issues', 'by-slug', slug]), IssueEnvelope);
    },
    listCategories() {
      return call('GET', buildUrl(['newsletter', 'categories']), CategoryListEnvelope);
    },
    createSubscriber(body) {
      return call('POST', buildUrl(['newsletter', 'subscribers']), SubscriberEnvelope, body);
    },
  };
}

/**
 * Paging of List Issues is not documented, so we read page after page (offset += rows) while
 * pages come back full, and stop early when a page adds no id we have not seen (an upstream
 * that ignores the offset parameter then costs one extra call, not an endless loop).
 */
export async function readWholeArchive(
  listIssues: (query: ListIssuesQuery) => Promise<UpstreamIssue[]>,
  maxIssues: number,
): Promise<UpstreamIssue[]> {
  const byId = new Map<string, UpstreamIssue>();
  const maxPages = Math.ceil(maxIssues / LIST_ISSUES_MAX_ROWS) + 1;
  for (let page = 0; page < maxPages && byId.size < maxIssues; page += 1) {
    const rows = await listIssues({
      status: 'sent',
      isPublic: true,
      limit: LIST_ISSUES_MAX_ROWS,
      offset: page * LIST_ISSUES_MAX_ROWS,
    });
    let added = 0;
    for (const row of rows) {
      if (byId.size >= maxIssues) break;
      if (!byId.has(row.id)) {
        byId.set(row.id, row);
        added += 1;
      }
    }
    if (rows.length < LIST_ISSUES_MAX_ROWS || added === 0) break;
  }
  return [...byId.values()];
}

/** Seconds from a `Retry-After` header: delta-seconds or an HTTP date (RFC 9110 §10.2.3). */
export function parseRetryAfter(value: string | null, nowMs: number): number | undefined {
  if (!value) return undefined;
  const trimmed = value.trim();
  if (/^\d{1,9}$/.test(trimmed)) return Math.max(1, Number(trimmed));
  // Only an IMF-fixdate is read as a date: Date.parse would take '-5' or '1.5' for a year.
  if (!/^[A-Za-z]{3}, \d{2} [A-Za-z]{3} \d{4} \d{2}:\d{2}:\d{2} GMT$/.test(trimmed)) return undefined;
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return undefined;
  return Math.max(1, Math.ceil((date - nowMs) / 1000));
}

async function discard(response: Response): Promise<void> {
  await response.body?.cancel().catch(() => undefined);
}
