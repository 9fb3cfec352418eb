import { createDemoUpstream, DEMO_API_KEY, DEMO_BASE_URL, type DemoUpstream } from '../../../src/demo/upstream.js';
import type { DemoCategory, DemoIssue } from '../../../src/demo/sample-publication.js';
import { UPSTREAM_PATHS } from '../../../src/core/upstream/assumptions.js';
import { errorEnvelope, faultyAnswer, json, realDelay, type Delay, type FaultMode } from './faults.js';
import { pathOf, rewriteBody, rewritesBodies, translateListQuery, type UpstreamVariant } from './variant.js';

export interface FakeUpstreamOptions {
  /** The key it accepts as `Authorization: Bearer <key>`; anything else is a 401. */
  apiKey?: string;
  /** Where it answers (any origin and path ending in the version); the demo's address by default. */
  baseUrl?: string;
  /** The publication it serves; the sample publication by default. */
  publication?: { categories: DemoCategory[]; issues: DemoIssue[] };
  variant?: UpstreamVariant;
  /** At most `calls` calls per `windowMs`; the next one is a 429 with `Retry-After`. */
  rateLimit?: { calls: number; windowMs: number };
  /** Added before every answer. */
  latencyMs?: number;
  /** Headers sent on every answer (the real service sends its own). */
  headers?: Record<string, string>;
  maxHoldMs?: number;
  now?: () => number;
  delay?: Delay;
}

type Operation = keyof typeof UPSTREAM_PATHS;

/** A letter published by `publish` was drafted this long before it was sent (a day, as createArchive's). */
const DRAFTED_BEFORE_SENDING_MS = 86_400_000;

/** The counter key per operation, e.g. `GET /newsletter/issues/by-slug/:slug`. */
const COUNTER_KEYS: Record<Operation, string> = {
  listIssues: `GET ${pathOf(UPSTREAM_PATHS.listIssues)}`,
  issueBySlug: `GET ${pathOf(UPSTREAM_PATHS.issueBySlug)}/:slug`,
  listCategories: `GET ${pathOf(UPSTREAM_PATHS.listCategories)}`,
  createSubscriber: `POST ${pathOf(UPSTREAM_PATHS.createSubscriber)}`,
};

function operationOf(method: string, path: string): { operation: Operation; slug?: string } | undefined {
  const bySlug = `${pathOf(UPSTREAM_PATHS.issueBySlug)}/`;
  if (method === 'GET' && path.startsWith(bySlug)) return { operation: 'issueBySlug', slug: decodeURIComponent(path.slice(bySlug.length)) };
  if (method === 'GET' && path === pathOf(UPSTREAM_PATHS.listIssues)) return { operation: 'listIssues' };
  if (method === 'GET' && path === pathOf(UPSTREAM_PATHS.listCategories)) return { operation: 'listCategories' };
  if (method === 'POST' && path === pathOf(UPSTREAM_PATHS.createSubscriber)) return { operation: 'createSubscriber' };
  return undefined;
}

/**
 * One fake newsletter service for tests, the demo's robustness checks and the bench: the demo
 * upstream (the core: four operations over a publication) behind knobs for how it differs
 * (variant.ts), how often it lets a caller in (rate limit), how slowly it answers, and how it
 * breaks (faults.ts). Its `fetch` plugs in as the client's injected fetch; server.ts puts the
 * same `fetch` on a real socket.
 */
export function createFakeUpstream(options: FakeUpstreamOptions = {}) {
  const apiKey = options.apiKey ?? DEMO_API_KEY;
  const now = options.now ?? Date.now;
  const delay = options.delay ?? realDelay;
  const variant = options.variant ?? {};
  const demo: DemoUpstream = createDemoUpstream({
    apiKey,
    now,
    ...(options.publication ? { publication: options.publication } : {}),
    ...(variant.order ? { order: variant.order } : {}),
  });
  const base = new URL(options.baseUrl ?? DEMO_BASE_URL);
  const basePath = base.pathname.replace(/\/$/, '');
  const demoBase = new URL(DEMO_BASE_URL);
  const sample = demo.issues[0];
  const internals = {
    workspaceId: sample?.workspaceId ?? 'ws',
    accountSetId: sample?.accountSetId ?? 'as',
    createdBy: sample?.createdBy ?? 'user',
  };
  const headers = options.headers ?? {};
  let mode: FaultMode = { kind: 'ok' };
  let latencyMs = options.latencyMs ?? 0;
  let stormIndex = 0;
  let window = { start: Number.NEGATIVE_INFINITY, calls: 0 };
  const counts = new Map<string, number>();
  const bytes = new Map<string, number>();
  // When the publication last changed, as Last-Modified says it (whole seconds, RFC 9110 §8.8.2).
  let changedAt = Math.max(0, ...demo.issues.map((issue) => Date.parse(issue.updatedAt) || 0));
  const changed = () => {
    changedAt = Math.max(changedAt + 1000, now());
  };
  const slugCounts = new Map<string, number>();
  let unknownSlugCalls = 0;
  const count = (key: string) => counts.set(key, (counts.get(key) ?? 0) + 1);

  /** The core's answer, as the variant would give it. */
  async function healthy(request: Request, url: URL, operation: Operation | undefined): Promise<Response> {
    const target = translateListQuery(url, basePath, variant);
    const body = request.method === 'GET' || request.method === 'HEAD' ? undefined : await request.text();
    const coreUrl = new URL(demoBase.pathname + target.pathname.slice(basePath.length) + target.search, demoBase.origin);
    const core = await demo.fetch(coreUrl, { method: request.method, headers: request.headers, body });
    const out = new Headers(core.headers);
    for (const [name, value] of Object.entries(headers)) out.set(name, value);
    if (core.ok && operation === 'listIssues' && variant.validators) return conditionalList(request, core, out);
    if (!core.ok || operation === undefined || !rewritesBodies(variant)) {
      return new Response(core.body, { status: core.status, headers: out });
    }
    return new Response(JSON.stringify(rewriteBody(operation, await core.json(), variant)), { status: core.status, headers: out });
  }

  /** A list page with its validators, or a 304 when the request's still match (If-None-Match first, RFC 9110 §13.2.2). */
  async function conditionalList(request: Request, core: Response, out: Headers): Promise<Response> {
    const text = rewritesBodies(variant) ? JSON.stringify(rewriteBody('listIssues', await core.json(), variant)) : await core.text();
    const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)));
    const etag = `"${[...digest.subarray(0, 12)].map((byte) => byte.toString(16).padStart(2, '0')).join('')}"`;
    const lastModified = new Date(Math.floor(changedAt / 1000) * 1000).toUTCString();
    if (variant.validators !== 'last-modified') out.set('ETag', etag);
    if (variant.validators !== 'etag') out.set('Last-Modified', lastModified);
    const ifNoneMatch = request.headers.get('if-none-match');
    const ifModifiedSince = Date.parse(request.headers.get('if-modified-since') ?? '');
    const unchanged =
      ifNoneMatch !== null
        ? variant.validators !== 'last-modified' && ifNoneMatch === etag
        : variant.validators !== 'etag' && ifModifiedSince >= Math.floor(changedAt / 1000) * 1000;
    if (unchanged) {
      out.delete('Content-Length');
      return new Response(null, { status: 304, headers: out });
    }
    return new Response(text, { status: core.status, headers: out });
  }

  /** Counts the bytes of an answer's body as it is read, per operation. */
  function counted(answer: Response, key: string): Response {
    if (!answer.body) return answer;
    const counter = new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        bytes.set(key, (bytes.get(key) ?? 0) + chunk.byteLength);
        controller.enqueue(chunk);
      },
    });
    return new Response(answer.body.pipeThrough(counter), {
      status: answer.status,
      statusText: answer.statusText,
      headers: answer.headers,
    });
  }

  /** The issue with `slug` in the publication, or an error naming it. */
  function issueNamed(slug: string): DemoIssue {
    const issue = demo.issues.find((candidate) => candidate.slug === slug);
    if (!issue) throw new Error(`the publication has no issue ${slug}`);
    return issue;
  }

  function rateLimited(): Response | undefined {
    const limit = options.rateLimit;
    if (!limit) return undefined;
    const time = now();
    if (time - window.start >= limit.windowMs) window = { start: time, calls: 0 };
    window.calls += 1;
    if (window.calls <= limit.calls) return undefined;
    const retryAfter = Math.max(1, Math.ceil((window.start + limit.windowMs - time) / 1000));
    return json(429, errorEnvelope('RATE_LIMITED', internals), { ...headers, 'Retry-After': String(retryAfter) });
  }

  const fetch: typeof globalThis.fetch = async (input, init) => {
    const request = new Request(input, init);
    const url = new URL(request.url);
    if (url.origin !== base.origin || !url.pathname.startsWith(`${basePath}/`)) {
      throw new TypeError('fetch failed: the fake upstream answers only its own address');
    }
    const current = mode;
    const found = operationOf(request.method, url.pathname.slice(basePath.length));
    if (request.headers.get('authorization') !== `Bearer ${apiKey}`) count('unauthorized');
    else if (found) count(COUNTER_KEYS[found.operation]);
    else count(`other ${request.method} ${url.pathname.slice(0, 80)}`);
    const context = {
      delay,
      maxHoldMs: options.maxHoldMs ?? 5_000,
      signal: request.signal,
      stormStatus: (statuses: readonly number[]) => statuses[stormIndex++ % statuses.length] ?? 503,
      headers,
      internals,
    };
    if (latencyMs > 0) await delay(Math.min(latencyMs, context.maxHoldMs), context.signal);
    const answer = rateLimited() ?? (await faultyAnswer(current, () => healthy(request, url, found?.operation), context));
    if (found?.slug !== undefined && current.kind === 'ok') {
      if (answer.status === 200) slugCounts.set(found.slug, (slugCounts.get(found.slug) ?? 0) + 1);
      else unknownSlugCalls += 1;
    }
    return found ? counted(answer, COUNTER_KEYS[found.operation]) : answer;
  };

  return {
    fetch,
    baseUrl: base.href.replace(/\/$/, ''),
    apiKey,
    /** The core: its publication (`issues`, `categories`) and its `subscribers`. */
    demo,
    /** Every later call is answered this way. */
    setMode(next: FaultMode): void {
      mode = next;
      stormIndex = 0;
    },
    get latencyMs() {
      return latencyMs;
    },
    setLatency(ms: number): void {
      latencyMs = ms;
    },
    /**
     * Publishes a copy of the newest public issue under `slug` (a fresh slug per test keeps a
     * cache from answering for the upstream), sent now and drafted the day before, as most
     * letters are; `createdAt` long ago makes it an old draft sent today, which an order by
     * creation lists deep.
     */
    publish(slug: string, dates: { createdAt?: string } = {}): DemoIssue {
      const template = demo.issues.find((issue) => issue.status === 'sent' && issue.isPublic && issue.slug);
      if (!template) throw new Error('the publication has no public issue to copy');
      const time = new Date(now()).toISOString();
      const issue: DemoIssue = {
        ...template,
        id: `${template.id}_${slug}`,
        slug,
        subject: `${template.subject} (${slug})`,
        sentAt: time,
        createdAt: dates.createdAt ?? new Date(now() - DRAFTED_BEFORE_SENDING_MS).toISOString(),
        updatedAt: time,
      };
      demo.issues.push(issue);
      changed();
      return issue;
    },
    /** Edits the issue with `slug` (its `updatedAt` moves to now). */
    edit(slug: string, changes: Partial<Pick<DemoIssue, 'subject' | 'contentHtml' | 'previewText'>>): DemoIssue {
      const issue = issueNamed(slug);
      Object.assign(issue, changes, { updatedAt: new Date(Math.max(now(), Date.parse(issue.updatedAt) + 1000)).toISOString() });
      changed();
      return issue;
    },
    /** Takes the issue with `slug` off the website (`isPublic: false`). */
    unpublish(slug: string): void {
      const issue = issueNamed(slug);
      issue.isPublic = false;
      issue.updatedAt = new Date(Math.max(now(), Date.parse(issue.updatedAt) + 1000)).toISOString();
      changed();
    },
    /** Body bytes answered per operation so far (by counter key), as far as they were read. */
    bytesServed: () => Object.fromEntries(bytes),
    /** Calls per operation so far (by counter key), plus by-slug calls for unknown slugs. */
    counts: () => ({ ...Object.fromEntries(counts), unknownSlugCalls }),
    callsFor: (key: string) => counts.get(key) ?? 0,
    slugCalls: (slug: string) => slugCounts.get(slug) ?? 0,
    get unknownSlugCalls() {
      return unknownSlugCalls;
    },
  };
}

export type FakeUpstream = ReturnType<typeof createFakeUpstream>;
