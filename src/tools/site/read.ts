import { hc } from 'hono/client';
import type { AppType } from '../../core/app.js';
import type { IssueSummary } from '../../core/public-shapes.js';
import type { Publication } from './build.js';

export interface ReadOptions {
  /** The service's origin, e.g. https://news-api.example.com. */
  apiUrl: string;
  /** Injected in tests (the app's own `request`); the global fetch otherwise. */
  fetch?: typeof globalThis.fetch;
  /** Issue pages read at once: a build is one visitor, not a crowd. */
  concurrency?: number;
  /** Waits before a retry (injected in tests); a real timer otherwise. */
  sleep?: (ms: number) => Promise<void>;
  /** The clock a `Retry-After` date is read against (injected in tests). */
  now?: () => number;
  /** Told of each wait, so a long build says why it pauses. */
  onWait?: (wait: { path: string; status: number; ms: number; attempt: number }) => void;
}

// The route's largest page (docs/contract.md "GET /api/issues").
const PAGE_LIMIT = 100;
// The service's own archive cap is 5000 issues by default; a bound for the loop all the same.
const MAX_PAGES = 1000;
export const DEFAULT_CONCURRENCY = 4;
const TIMEOUT_MS = 30_000;
/**
 * A read refused as busy (429, or 503 with the service's `Retry-After`) is tried again after
 * the wait it names, at most this many times, each wait cut to MAX_WAIT_MS: a build waits out a
 * budget or an upstream hold-off, and still ends (at worst a few minutes per read) when the
 * service stays busy.
 */
const MAX_RETRIES = 5;
const MAX_WAIT_MS = 60_000;
/** The wait when a refusal names none: doubled each time (1, 2, 4 … seconds). */
const FIRST_WAIT_MS = 1_000;

/** A read that did not give a 200: the build stops rather than deploy a site with holes. */
export class SiteReadError extends Error {
  override name = 'SiteReadError';
}

/**
 * The typed client (`hc<AppType>`) a build reads the service with: each call times out, and a
 * read refused as busy (429, or 503 with `Retry-After`) is tried again after the wait it names
 * (`retryWaitMs`). Shared by the site builder and the Astro loader (src/integrations/astro.ts).
 */
export function createReadClient(options: Pick<ReadOptions, 'apiUrl' | 'fetch' | 'sleep' | 'now' | 'onWait'>) {
  const fetch = options.fetch ?? globalThis.fetch;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const now = options.now ?? Date.now;
  const fetchOnce = (input: RequestInfo | URL, init: RequestInit | undefined, path: string) =>
    fetch(input, { ...init, signal: AbortSignal.timeout(TIMEOUT_MS) }).catch((error: unknown) => {
      throw new SiteReadError(`could not read ${path} from ${options.apiUrl}: ${(error as Error).message}`, { cause: error });
    });
  return hc<AppType>(options.apiUrl.replace(/\/+$/, ''), {
    async fetch(input: RequestInfo | URL, init?: RequestInit) {
      const path = new URL(input instanceof Request ? input.url : String(input)).pathname;
      for (let attempt = 1; ; attempt++) {
        const response = await fetchOnce(input, init, path);
        const ms = attempt <= MAX_RETRIES ? retryWaitMs(response, attempt, now()) : undefined;
        if (ms === undefined) return response;
        await response.body?.cancel();
        options.onWait?.({ path, status: response.status, ms, attempt });
        await sleep(ms);
      }
    },
    headers: { Accept: 'application/json' },
  });
}

/** Every issue summary of the archive, newest first, read page by page (the route's largest page). */
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

/**
 * Reads the whole public archive through the typed client (`hc<AppType>`): every archive
 * page, the categories, and each issue by slug. The same four routes a browser uses.
 */
export async function readPublication(options: ReadOptions): Promise<Publication> {
  const client = createReadClient(options);
  const summaries = await readArchive(client);

  const categoriesResponse = await client.api.categories.$get();
  if (categoriesResponse.status !== 200) throw new SiteReadError(`GET /api/categories answered ${categoriesResponse.status}`);
  const { data: categories } = await categoriesResponse.json();

  const issues = await mapWithConcurrency(summaries, options.concurrency ?? DEFAULT_CONCURRENCY, async (summary) => {
    const response = await client.api.issues[':slug'].$get({ param: { slug: summary.slug } });
    if (response.status !== 200) throw new SiteReadError(`GET /api/issues/${summary.slug} answered ${response.status}`);
    return (await response.json()).data;
  });
  return { issues, categories };
}

/** `map` with at most `limit` calls in flight; results keep the input's order. */
export async function mapWithConcurrency<T, R>(items: readonly T[], limit: number, map: (item: T, index: number) => Promise<R>): Promise<R[]> {
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

/**
 * How long to wait before asking again after `response`, or `undefined` when it is an answer to
 * keep: 429 always waits; 503 only with `Retry-After` (the service's busy answer; a 503 without
 * one is a failure to report). `Retry-After` is read as seconds or as an HTTP date.
 */
function retryWaitMs(response: Response, attempt: number, now: number): number | undefined {
  const header = response.headers.get('retry-after');
  if (response.status !== 429 && !(response.status === 503 && header !== null)) return undefined;
  const named = header === null ? Number.NaN : /^\d+$/.test(header.trim()) ? Number(header) * 1000 : Date.parse(header) - now;
  const ms = Number.isFinite(named) ? named : FIRST_WAIT_MS * 2 ** (attempt - 1);
  return Math.min(MAX_WAIT_MS, Math.max(0, ms));
}
