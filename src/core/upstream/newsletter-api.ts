import { createDemoUpstream } from '../../demo/upstream.js';
import type { Config } from '../config/config.js';
import type { Logger } from '../log.js';
import { noopMetrics, type Metrics } from '../metrics.js';
import { SLUG_PATTERN } from '../slug.js';
import { readArchiveHead, readWholeArchive, type ArchiveRead, type ArchiveReadOptions, type ListedPage, type ListPage } from './archive.js';
import type { HeadRead, HeadReadOptions } from './archive.js';
import { DEFAULT_LIST_PAGING, UPSTREAM_PATHS, type ListPaging } from './assumptions.js';
import { parseRowList } from './row-scanner.js';
import { IssueEnvelope, KNOWN_ISSUE_STATUSES, KNOWN_SUBSCRIBER_STATUSES, ListedCategorySchema, readRows } from './schemas.js';
import { RowListEnvelope, SubscriberEnvelope, UpstreamIssueSchema } from './schemas.js';
import type { CreateSubscriberBody, UpstreamCategory, UpstreamIssue } from './schemas.js';
import { createTransport, UpstreamError, type TransportOptions, type TransportRequest } from './transport.js';

export interface UpstreamClientOptions extends TransportOptions {
  baseUrl: string;
  paging?: ListPaging | undefined;
  log?: Logger | undefined;
  metrics?: Pick<Metrics, 'upstreamCall' | 'upstreamRetry' | 'upstreamHoldOff'>;
}

/** The four upstream operations a public site needs, and nothing else. The archive reads log what they found. */
export interface UpstreamClient {
  listAllPublicIssues(maxIssues: number): Promise<UpstreamIssue[]>;
  readPublicArchive?<K>(maxIssues: number, options: ArchiveReadOptions<K>): Promise<ArchiveRead<K>>;
  readPublicArchiveHead?<K>(options: HeadReadOptions<K>): Promise<HeadRead<K>>;
  getIssueBySlug(slug: string): Promise<UpstreamIssue>;
  listCategories(): Promise<UpstreamCategory[]>;
  /** The success envelope alone means accepted (docs/contract.md "POST /api/subscribe"); the status is only logged. */
  createSubscriber(body: CreateSubscriberBody): Promise<{ status?: string | undefined }>;
}

/** `readArchive`: for `check`, what the read found returned, not logged. */
export type NewsletterApiClient = UpstreamClient & { readArchive(maxIssues: number): Promise<ArchiveRead> };

const NOT_MODIFIED_PAGE = Object.freeze({ ok: true as const, data: Object.freeze([]) as unknown as unknown[] });

/** The other members, the editor state above all, are never built (row-scanner.ts). */
const ISSUE_ROW_FIELDS: ReadonlySet<string> = new Set(Object.keys(UpstreamIssueSchema.shape));

export function createUpstreamUrlBuilder(baseUrl: string) {
  const base = new URL(baseUrl);
  const basePath = base.pathname.replace(/\/+$/, '');

  return function buildUpstreamUrl(segments: readonly string[], query?: Record<string, string>): URL {
    // An empty segment stays under the base yet asks for a path we never meant (`by-slug/`).
    if (segments.includes('')) throw new UpstreamError('validation', 'refused to build an upstream path with an empty segment');
    const expectedPath = `${basePath}/${segments.map(encodeURIComponent).join('/')}`;
    const url = new URL(base.origin + expectedPath);
    // A dot segment the parser resolved (encodeURIComponent leaves `..`) would let a slug walk to another operation or host.
    if (url.origin !== base.origin || url.pathname !== expectedPath) {
      throw new UpstreamError('validation', 'refused an upstream URL outside the configured base path');
    }
    for (const [name, value] of Object.entries(query ?? {})) url.searchParams.set(name, value);
    return url;
  };
}

export function createUpstreamClient(options: UpstreamClientOptions): NewsletterApiClient {
  const { baseUrl, paging = DEFAULT_LIST_PAGING, log, metrics = noopMetrics, ...tuning } = options;
  const notices = createUpstreamNotices(log);
  const buildUrl = createUpstreamUrlBuilder(baseUrl);
  const transport = createTransport({ ...tuning, metrics });

  async function request<T>(operation: string, call: TransportRequest<{ data: T }>): Promise<T> {
    const started = performance.now();
    const seconds = () => (performance.now() - started) / 1000;
    const { data } = await transport(call).catch((error: unknown) => {
      metrics.upstreamCall(operation, seconds(), error);
      throw error;
    });
    metrics.upstreamCall(operation, seconds());
    return data;
  }

  // Every read of List Issues is an archive read: the public, sent issues, page by page.
  const listPage: ListPage = async ({ limit, offset, page, conditional }) => {
    const answered: Pick<ListedPage, 'validators' | 'bytes'> = {};
    const data = await request('list_issues', {
      method: 'GET',
      url: buildUrl(UPSTREAM_PATHS.listIssues, {
        status: 'sent',
        isPublic: 'true',
        [paging.limitParam]: String(limit),
        [paging.pagingParam]: String(paging.style === 'page' ? page : offset),
      }),
      schema: RowListEnvelope,
      conditional,
      notModified: () => NOT_MODIFIED_PAGE,
      answered,
      parse: (text) => parseRowList(text, ISSUE_ROW_FIELDS),
    });
    if (data === NOT_MODIFIED_PAGE.data) return { rows: [], droppedIds: [], notModified: true, validators: conditional };
    const listed = readRows(data, UpstreamIssueSchema);
    for (const row of listed.rows) notices.issueStatus(row.status);
    return { ...listed, ...answered };
  };

  // Learnt from a page over the body cap: later reads start there.
  let learntPageSize: number | undefined;

  async function readArchive<K = UpstreamIssue>(maxIssues: number, options?: ArchiveReadOptions<K>): Promise<ArchiveRead<K>> {
    const read = await readWholeArchive(listPage, paging, maxIssues, { pageSize: learntPageSize, ...options } as ArchiveReadOptions<K>);
    if (read.pageSize < paging.pageSize) learntPageSize = read.pageSize;
    return read;
  }

  async function readPublicArchive<K>(maxIssues: number, options: ArchiveReadOptions<K>): Promise<ArchiveRead<K>> {
    const read = await readArchive(maxIssues, options);
    notices.dropped('listIssues', read.dropped.ids, read.dropped.count);
    notices.paging(read);
    return read;
  }

  return {
    readArchive: (maxIssues) => readArchive(maxIssues),
    listAllPublicIssues: async (maxIssues) => (await readPublicArchive(maxIssues, { reduceRow: (row) => row })).issues,
    readPublicArchive,
    async readPublicArchiveHead(options) {
      const read = await readArchiveHead(listPage, { ...options, pageSize: learntPageSize ?? paging.pageSize });
      notices.dropped('listIssues', read.dropped.ids, read.dropped.count);
      return read;
    },
    async getIssueBySlug(slug) {
      if (!SLUG_PATTERN.test(slug)) throw new UpstreamError('validation', 'refused to request an issue with an invalid slug');
      const url = buildUrl([...UPSTREAM_PATHS.issueBySlug, slug]);
      const issue = await request('get_issue_by_slug', { method: 'GET', url, schema: IssueEnvelope });
      notices.issueStatus(issue.status);
      return issue;
    },
    async listCategories() {
      const url = buildUrl(UPSTREAM_PATHS.listCategories);
      const listed = await request('list_categories', { method: 'GET', url, schema: RowListEnvelope });
      const { rows, droppedIds } = readRows(listed, ListedCategorySchema);
      notices.dropped('listCategories', droppedIds);
      return rows;
    },
    async createSubscriber(body) {
      const url = buildUrl(UPSTREAM_PATHS.createSubscriber);
      const data = await request('create_subscriber', { method: 'POST', url, schema: SubscriberEnvelope, body });
      const status = (data as { status?: unknown } | null | undefined)?.status;
      notices.state('subscriber', KNOWN_SUBSCRIBER_STATUSES, status);
      return { status: typeof status === 'string' ? status : undefined };
    },
  };
}

export interface UpstreamForConfigDeps
  extends Pick<UpstreamClientOptions, 'fetch' | 'now' | 'log' | 'metrics' | 'holdOff' | 'waitWhenHeldOffMs' | 'sleep'> {
  demoOrigin?: string | undefined;
}

/** The configured upstream or the demo; the service and `check` both build theirs here, so `check` probes what the site calls. */
export function createUpstreamForConfig(config: Config, deps: UpstreamForConfigDeps): NewsletterApiClient {
  const { demoOrigin, ...passed } = deps;
  const demo = config.mode === 'demo' ? createDemoUpstream({ now: deps.now, siteOrigin: demoOrigin || undefined }) : undefined;
  return createUpstreamClient({
    ...passed,
    timeoutMs: config.upstreamTimeoutMs,
    paging: config.listPaging,
    onHoldOff: ({ call, untilMs, ...start }) =>
      deps.log?.log('warn', 'upstream_hold_off', { ...start, refusedCall: call, until: new Date(untilMs).toISOString() }),
    baseUrl: demo ? demo.baseUrl : (config.apiBaseUrl ?? ''),
    apiKey: demo ? demo.apiKey : (config.apiKey ?? ''),
    fetch: demo ? demo.fetch : deps.fetch,
  });
}

const MAX_NAMED_IDS = 10;
const MAX_NOTED_STATES = 64;

/** What the upstream does that its documentation does not say, told to the owner without failing a visitor; bounded. */
function createUpstreamNotices(log: Logger | undefined) {
  const noted = new Set<string>();

  function state(resource: 'issue' | 'subscriber', known: ReadonlySet<string>, status: unknown): void {
    if (!log || typeof status !== 'string' || known.has(status)) return;
    const key = `${resource}:${status}`;
    if (noted.has(key) || noted.size >= MAX_NOTED_STATES) return;
    noted.add(key);
    log.log('info', 'upstream_unknown_status', { resource, status: status.slice(0, 40) });
  }

  return {
    state,
    issueStatus: (status: string) => state('issue', KNOWN_ISSUE_STATUSES, status),
    dropped(operation: 'listIssues' | 'listCategories', ids: readonly (string | undefined)[], count = ids.length): void {
      if (!log || count === 0) return;
      const named = ids.filter((id): id is string => id !== undefined).slice(0, MAX_NAMED_IDS);
      log.log('warn', 'upstream_rows_dropped', { operation, count, ids: named.join(',') || undefined });
    },
    paging({ findings, pageRows, issues }: ArchiveRead<unknown>): void {
      if (!log || findings.length === 0) return;
      log.log('warn', 'upstream_paging', {
        problems: findings.map((finding) => finding.problem).join(','),
        seen: findings.map((finding) => finding.seen).join('; '),
        set: findings.map((finding) => finding.set).join('; '),
        calls: pageRows.length,
        issues: issues.length,
      });
    },
  };
}
