import { hc } from 'hono/client';
import type { AppType } from '../../core/app.js';
import type { IssueDetail, IssueSummary, PublicCategory } from '../../core/public-shapes.js';
import { toIssueNeighbour } from '../../core/reads/allow-list.js';

export type Publication = { issues: readonly IssueDetail[]; categories: readonly PublicCategory[] };

export interface ReadOptions {
  apiUrl: string;
  fetch?: typeof globalThis.fetch;
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
  onWait?: (wait: { path: string; status: number; ms: number; attempt: number }) => void;
}

// The route's largest page (docs/contract.md "GET /api/issues"), and a bound for the loop.
const PAGE_LIMIT = 100;
const MAX_PAGES = 1000;
// Issue pages read at once: a build is one visitor, not a crowd.
export const DEFAULT_CONCURRENCY = 4;
const TIMEOUT_MS = 30_000;
// A build waits out a busy service a bounded number of times; a refusal that names no wait doubles it.
const MAX_RETRIES = 5;
const MAX_WAIT_MS = 60_000;
const FIRST_WAIT_MS = 1_000;

export class SiteReadError extends Error {
  override name = 'SiteReadError';
}

export function createReadClient(options: ReadOptions) {
  const fetch = options.fetch ?? globalThis.fetch;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  return hc<AppType>(options.apiUrl.replace(/\/+$/, ''), {
    async fetch(input: RequestInfo | URL, init?: RequestInit) {
      const path = new URL(input instanceof Request ? input.url : String(input)).pathname;
      for (let attempt = 1; ; attempt++) {
        const response = await fetch(input, { ...init, signal: AbortSignal.timeout(TIMEOUT_MS) }).catch((error: unknown) => {
          throw new SiteReadError(`could not read ${path} from ${options.apiUrl}: ${(error as Error).message}`, { cause: error });
        });
        const ms = attempt <= MAX_RETRIES ? retryWaitMs(response, attempt, (options.now ?? Date.now)()) : undefined;
        if (ms === undefined) return response;
        await response.body?.cancel();
        options.onWait?.({ path, status: response.status, ms, attempt });
        await sleep(ms);
      }
    },
    headers: { Accept: 'application/json' },
  });
}

export async function readArchive(client: ReturnType<typeof createReadClient>): Promise<IssueSummary[]> {
  const summaries: IssueSummary[] = [];
  for (let page = 0; page < MAX_PAGES; page++) {
    const response = await client.api.issues.$get({ query: { limit: String(PAGE_LIMIT), offset: String(page * PAGE_LIMIT) } });
    if (response.status !== 200) throw new SiteReadError(`GET /api/issues answered ${response.status}`);
    const body = await response.json();
    summaries.push(...body.data);
    if (body.data.length < PAGE_LIMIT || summaries.length >= body.meta.total) break;
  }
  return summaries;
}

export async function readPublication(options: ReadOptions): Promise<Publication> {
  const client = createReadClient(options);
  const summaries = await readArchive(client);
  const listed = await client.api.categories.$get();
  if (listed.status !== 200) throw new SiteReadError(`GET /api/categories answered ${listed.status}`);
  const { data: categories } = await listed.json();
  const issues = await mapWithConcurrency(summaries, DEFAULT_CONCURRENCY, async (summary) => {
    const response = await client.api.issues[':slug'].$get({ param: { slug: summary.slug } });
    if (response.status !== 200) throw new SiteReadError(`GET /api/issues/${summary.slug} answered ${response.status}`);
    return (await response.json()).data;
  });
  return { issues, categories };
}

export const neighbourOf = (summary: IssueSummary | undefined) => (summary ? toIssueNeighbour(summary) : null);

export async function mapWithConcurrency<T, R>(items: readonly T[], limit: number, map: (item: T, index: number) => Promise<R>) {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await map(items[index]!, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/** How long to wait after a 429, or a 503 with `Retry-After` (without it, a failure to report); undefined: keep the answer. */
function retryWaitMs(response: Response, attempt: number, now: number): number | undefined {
  const header = response.headers.get('retry-after');
  if (response.status !== 429 && !(response.status === 503 && header !== null)) return undefined;
  const named = header === null ? Number.NaN : /^\d+$/.test(header.trim()) ? Number(header) * 1000 : Date.parse(header) - now;
  const ms = Number.isFinite(named) ? named : FIRST_WAIT_MS * 2 ** (attempt - 1);
  return Math.min(MAX_WAIT_MS, Math.max(0, ms));
}
