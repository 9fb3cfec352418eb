import { Hono, type Context } from 'hono';
import * as assumed from '../core/upstream/assumptions.js';
import { SOURCE_PLATFORMS, SUBSCRIBER_SOURCE_TYPES } from '../core/upstream/schemas.js';
import * as sample from './sample-publication.js';

// `.invalid` can never resolve (RFC 6761).
export const DEMO_BASE_URL = 'https://demo.newsletter.invalid/v1';
// Not a secret: the demo accepts only this key, so the client's auth path runs.
export const DEMO_API_KEY = 'demo-key-not-a-secret';
export const DEMO_BLOCKED_EMAIL = 'blocked@example.com';

const path = (segments: readonly string[]) => `/${segments.join('/')}`;

export type DemoUpstream = ReturnType<typeof createDemoUpstream>;

export interface DemoUpstreamOptions {
  apiKey?: string;
  now?: () => number;
  publication?: { categories: sample.DemoCategory[]; issues: sample.DemoIssue[] };
  siteOrigin?: string;
  order?: 'created' | 'newest-sent' | 'oldest-sent';
}

const sent = (issue: sample.DemoIssue) => issue.sentAt ?? '';
// Ties by id, so pages never overlap.
const LIST_ORDERS: Record<NonNullable<DemoUpstreamOptions['order']>, (a: sample.DemoIssue, b: sample.DemoIssue) => number> = {
  created: (a, b) => b.createdAt.localeCompare(a.createdAt),
  'newest-sent': (a, b) => sent(b).localeCompare(sent(a)),
  'oldest-sent': (a, b) => sent(a).localeCompare(sent(b)),
};

function subscriberOf(id: string, email: string, status: 'subscribed' | 'blocked', input: Record<string, unknown>) {
  const text = (value: unknown) => (typeof value === 'string' ? value : undefined);
  const sources = { sourceType: String(input.sourceType), source: text(input.source), sourcePlatform: text(input.sourcePlatform) };
  return { id, emailNormalized: email.toLowerCase(), emailOriginal: email, status, ...sources };
}

function invalid(rules: [path: string, broken: boolean, message: string][]): { path: string; message: string }[] {
  return rules.filter(([, broken]) => broken).map(([path, , message]) => ({ path, message }));
}

function fail(c: Context, status: number, code: string, message: string, details?: unknown) {
  return c.json({ ok: false, error: { code, message, ...(details === undefined ? {} : { details }) } }, status as 401);
}

/** The upstream operations we use, in process, as the injected `fetch`: demo mode and tests run the real client. */
export function createDemoUpstream(options: DemoUpstreamOptions = {}) {
  const { apiKey = DEMO_API_KEY, now = Date.now, order = 'created' } = options;
  const { categories, issues } = options.publication ?? sample.createSamplePublication(options.siteOrigin);
  const blocked = subscriberOf('sub_blocked', DEMO_BLOCKED_EMAIL, 'blocked', { sourceType: 'import' });
  const subscribers = new Map([[DEMO_BLOCKED_EMAIL, blocked]]);
  const base = new URL(DEMO_BASE_URL);

  const app = new Hono().basePath(base.pathname);
  app.use(async (c, next) => {
    if (c.req.header('authorization') !== `Bearer ${apiKey}`) return fail(c, 401, 'UNAUTHORIZED', 'API key missing or invalid');
    return next();
  });

  app.get(path(assumed.UPSTREAM_PATHS.listIssues), (c) => {
    const { status, isPublic, [assumed.LIST_ISSUES_LIMIT_PARAM]: limit, [assumed.LIST_ISSUES_OFFSET_PARAM]: offset } = c.req.query();
    const rows = limit === undefined ? assumed.LIST_ISSUES_DEFAULT_ROWS : Number(limit);
    const maxRows = assumed.LIST_ISSUES_MAX_ROWS;
    const skip = offset === undefined ? 0 : Number(offset);
    const problems = invalid([
      [assumed.LIST_ISSUES_LIMIT_PARAM, !Number.isInteger(rows) || rows < 1 || rows > maxRows, `must be 1 to ${maxRows}`],
      [assumed.LIST_ISSUES_OFFSET_PARAM, !Number.isInteger(skip) || skip < 0, 'must be 0 or more'],
      ['status', status !== undefined && !['draft', 'sending', 'sent', 'failed'].includes(status), 'unknown status'],
      ['isPublic', isPublic !== undefined && isPublic !== 'true' && isPublic !== 'false', 'must be a boolean'],
    ]);
    if (problems.length > 0) return fail(c, 422, 'VALIDATION_ERROR', 'Invalid query', problems);
    const matching = issues
      .filter((issue) => status === undefined || issue.status === status)
      .filter((issue) => isPublic === undefined || issue.isPublic === (isPublic === 'true'))
      .sort((a, b) => LIST_ORDERS[order](a, b) || a.id.localeCompare(b.id));
    return c.json({ ok: true, data: matching.slice(skip, skip + rows) });
  });

  app.get(`${path(assumed.UPSTREAM_PATHS.issueBySlug)}/:slug`, (c) => {
    const slug = c.req.param('slug');
    const issue = issues.find((candidate) => candidate.slug === slug && candidate.status === 'sent' && candidate.isPublic);
    if (!issue) return fail(c, assumed.NOT_FOUND_STATUS, 'NOT_FOUND', 'Issue not found');
    return c.json({ ok: true, data: issue });
  });

  app.get(path(assumed.UPSTREAM_PATHS.listCategories), (c) => c.json({ ok: true, data: categories }));

  app.post(path(assumed.UPSTREAM_PATHS.createSubscriber), async (c) => {
    const body: unknown = await c.req.json().catch(() => undefined);
    const input = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
    const email = typeof input.email === 'string' ? input.email.trim() : '';
    const { source, sourcePlatform } = input;
    const problems = invalid([
      ['email', !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email), 'Invalid email'],
      ['optInAttestation', input.optInAttestation !== true, 'Must be true'],
      ['sourceType', !SUBSCRIBER_SOURCE_TYPES.includes(input.sourceType as never), 'Invalid'],
      ['source', source !== undefined && (typeof source !== 'string' || source.length > 160), 'At most 160 characters'],
      ['sourcePlatform', sourcePlatform !== undefined && !SOURCE_PLATFORMS.includes(sourcePlatform as never), 'Invalid'],
    ]);
    if (problems.length > 0) return fail(c, 422, 'VALIDATION_ERROR', 'Invalid subscriber', problems);

    const normalized = email.toLowerCase();
    const existing = subscribers.get(normalized);
    if (existing?.status === 'blocked')
      return fail(c, assumed.SUBSCRIBER_REFUSED.status, assumed.SUBSCRIBER_REFUSED.code, `Subscriber ${normalized} is blocked`);
    const timestamp = new Date(now()).toISOString();
    const subscriber = existing ?? subscriberOf(`sub_${String(subscribers.size + 1).padStart(4, '0')}`, email, 'subscribed', input);
    subscribers.set(normalized, subscriber);
    const owner = { workspaceId: sample.DEMO_WORKSPACE_ID, accountSetId: sample.DEMO_ACCOUNT_SET_ID };
    return c.json({ ok: true, data: { ...subscriber, ...owner, subscribedAt: timestamp, createdAt: timestamp, updatedAt: timestamp } });
  });

  app.notFound((c) => fail(c, assumed.NOT_FOUND_STATUS, 'NOT_FOUND', 'No such operation in the demo upstream'));

  const demoFetch: typeof globalThis.fetch = async (input, init) => {
    const request = new Request(input, init);
    if (new URL(request.url).origin !== base.origin) throw new TypeError('fetch failed: the demo upstream answers only its own host');
    return app.fetch(request);
  };

  // A test may add to `issues`.
  return { fetch: demoFetch, baseUrl: DEMO_BASE_URL, apiKey, subscribers, issues, categories };
}
