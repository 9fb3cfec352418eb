import { hc } from 'hono/client';
import type { AppType } from '../app.js';
import type { IssueSummary } from '../shape.js';
import type { Publication } from './build.js';

export interface ReadOptions {
  /** The service's origin, e.g. https://news-api.example.com. */
  apiUrl: string;
  /** Injected in tests (the app's own `request`); the global fetch otherwise. */
  fetch?: typeof globalThis.fetch;
  /** Issue pages read at once: a build is one visitor, not a crowd. */
  concurrency?: number;
}

// The route's largest page (docs/contract.md "GET /api/issues").
const PAGE_LIMIT = 100;
// The service's own archive cap is 5000 issues by default; a bound for the loop all the same.
const MAX_PAGES = 1000;
const DEFAULT_CONCURRENCY = 4;
const TIMEOUT_MS = 30_000;

/** A read that did not give a 200: the build stops rather than deploy a site with holes. */
export class SiteReadError extends Error {
  override name = 'SiteReadError';
}

/**
 * Reads the whole public archive through the typed client (`hc<AppType>`): every archive
 * page, the categories, and each issue by slug. The same four routes a browser uses.
 */
export async function readPublication(options: ReadOptions): Promise<Publication> {
  const fetch = options.fetch ?? globalThis.fetch;
  const client = hc<AppType>(options.apiUrl.replace(/\/+$/, ''), {
    fetch: (input: RequestInfo | URL, init?: RequestInit) =>
      fetch(input, { ...init, signal: AbortSignal.timeout(TIMEOUT_MS) }).catch((error: unknown) => {
        const path = new URL(input instanceof Request ? input.url : String(input)).pathname;
        throw new SiteReadError(`could not read ${path} from ${options.apiUrl}: ${(error as Error).message}`, { cause: error });
      }),
    headers: { Accept: 'application/json' },
  });

  const summaries: IssueSummary[] = [];
  for (let page = 0; page < MAX_PAGES; page++) {
    const response = await client.api.issues.$get({ query: { limit: String(PAGE_LIMIT), offset: String(page * PAGE_LIMIT) } });
    if (response.status !== 200) throw new SiteReadError(`GET /api/issues answered ${response.status}`);
    const body = await response.json();
    summaries.push(...body.data);
    if (body.data.length < PAGE_LIMIT || summaries.length >= body.meta.total) break;
  }

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
async function mapWithConcurrency<T, R>(items: readonly T[], limit: number, map: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await map(items[index]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
