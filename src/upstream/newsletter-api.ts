import { SLUG_PATTERN } from '../slug.js';
import { readWholeArchive } from './archive.js';
import { LIST_ISSUES_LIMIT_PARAM, LIST_ISSUES_OFFSET_PARAM, UPSTREAM_PATHS } from './assumptions.js';
import {
  CategoryListEnvelope,
  IssueEnvelope,
  IssueListEnvelope,
  SubscriberEnvelope,
  UpstreamErrorBodySchema,
  type CreateSubscriberBody,
  type ListIssuesQuery,
  type UpstreamCategory,
  type UpstreamIssue,
  type UpstreamSubscriber,
} from './schemas.js';
import { noopMetrics, type Metrics } from '../metrics.js';
import { createTransport, UpstreamError, type TransportOptions, type TransportRequest } from './transport.js';

export type { ListIssuesQuery } from './schemas.js';

export interface UpstreamClientOptions extends Omit<TransportOptions, 'headers' | 'errorCodeOf' | 'notFoundCode'> {
  /** Root ending in `/v1`, as validated by parseConfig. */
  baseUrl: string;
  apiKey: string;
  /** Create Subscriber creates or resubscribes, so one repeat after a 5xx or a reset is safe (default 1). */
  postRetries?: number;
  /** Told of each operation's calls, retries and hold-offs (no-op by default). */
  metrics?: Pick<Metrics, 'upstreamCall' | 'upstreamRetry' | 'upstreamHoldOff'>;
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

/** The error code of Get Issue By Slug's not-found answer (docs/upstream.md "Errors"). */
const NOT_FOUND_CODE = 'NOT_FOUND';

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
  const { baseUrl, apiKey, postRetries = 1, ...tuning } = options;
  const buildUrl = createUpstreamUrlBuilder(baseUrl);
  const transport = createTransport({
    ...tuning,
    postRetries,
    headers: { Authorization: `Bearer ${apiKey}` },
    // The error envelope `{ ok: false, error: { code } }` (docs/upstream.md "Response envelope").
    errorCodeOf: (body) => {
      const parsed = UpstreamErrorBodySchema.safeParse(body);
      return parsed.success ? parsed.data.error.code : undefined;
    },
    notFoundCode: NOT_FOUND_CODE,
  });
  const { metrics = noopMetrics } = options;
  const request = <T>(operation: string, call: TransportRequest<T>) => timed(metrics, operation, () => transport(call));

  async function listIssues(query: ListIssuesQuery): Promise<UpstreamIssue[]> {
    const url = buildUrl(UPSTREAM_PATHS.listIssues, {
      status: query.status,
      isPublic: String(query.isPublic),
      [LIST_ISSUES_LIMIT_PARAM]: String(query.limit),
      [LIST_ISSUES_OFFSET_PARAM]: String(query.offset),
    });
    return (await request('list_issues', { method: 'GET', url, schema: IssueListEnvelope })).data;
  }

  return {
    listIssues,
    listAllPublicIssues: (maxIssues) => readWholeArchive(listIssues, maxIssues),
    async getIssueBySlug(slug) {
      if (!SLUG_PATTERN.test(slug)) {
        throw new UpstreamError('validation', 'refused to request an issue with an invalid slug');
      }
      const url = buildUrl([...UPSTREAM_PATHS.issueBySlug, slug]);
      return (await request('get_issue_by_slug', { method: 'GET', url, schema: IssueEnvelope })).data;
    },
    async listCategories() {
      const url = buildUrl(UPSTREAM_PATHS.listCategories);
      return (await request('list_categories', { method: 'GET', url, schema: CategoryListEnvelope })).data;
    },
    async createSubscriber(body) {
      const url = buildUrl(UPSTREAM_PATHS.createSubscriber);
      return (await request('create_subscriber', { method: 'POST', url, schema: SubscriberEnvelope, body })).data;
    },
  };
}

/** Runs one call of `operation` (its retries included) and tells `metrics` how long it took and how it ended. */
async function timed<T>(metrics: Pick<Metrics, 'upstreamCall'>, operation: string, call: () => Promise<T>): Promise<T> {
  const started = performance.now();
  try {
    const value = await call();
    metrics.upstreamCall(operation, (performance.now() - started) / 1000);
    return value;
  } catch (error) {
    metrics.upstreamCall(operation, (performance.now() - started) / 1000, error);
    throw error;
  }
}
