/**
 * The service's routes as this site reads them, through newsletter-bff's typed client
 * (`hc<AppType>`, types only: nothing of the service's code is bundled). A static build reads
 * at build time; the server build (`NEWSLETTER_SSR=1`) reads at request time, so its fetch is a
 * good citizen of the service: a few connections kept alive and reused, one request for many
 * renders of the same page, and each answer kept for as long as its Cache-Control says, then
 * revalidated with its ETag (a 304 costs the service no body).
 */
import { hc } from 'hono/client';
import type { AppType, IssueDetail, IssueSummary, PublicCategory } from 'newsletter-bff/client';

/** The service's origin: the demo service (`npx newsletter-bff`) unless NEWSLETTER_BFF_URL says otherwise. */
export const SERVICE_URL = process.env.NEWSLETTER_BFF_URL ?? 'http://127.0.0.1:8787';
export const PAGE_SIZE = 10;

/** Requests in flight at once: one renderer is one client, however many visitors it serves. */
const MAX_IN_FLIGHT = 8;
const MAX_KEPT = 500;

interface Kept {
  status: number;
  body: string;
  etag: string | null;
  freshUntil: number;
}

/** A read that failed, or an answer a page cannot show: the static build stops; the server build answers 503 (src/middleware.ts). */
export class ServiceError extends Error {
  override name = 'ServiceError';
}

const kept = new Map<string, Kept>();
const inFlight = new Map<string, Promise<Kept>>();
const waiting: (() => void)[] = [];
let running = 0;

async function slot<T>(work: () => Promise<T>): Promise<T> {
  if (running >= MAX_IN_FLIGHT) await new Promise<void>((resolve) => waiting.push(resolve));
  running++;
  try {
    return await work();
  } finally {
    running--;
    waiting.shift()?.();
  }
}

function maxAgeMs(cacheControl: string | null): number {
  const seconds = /(?:^|,)\s*max-age=(\d+)/.exec(cacheControl ?? '')?.[1];
  return seconds === undefined || /no-store|no-cache/.test(cacheControl ?? '') ? 0 : Number(seconds) * 1000;
}

/** One GET, shared by every render that asks for the same URL at once, kept as its Cache-Control allows. */
async function read(url: string): Promise<Kept> {
  const now = Date.now();
  const held = kept.get(url);
  if (held && held.freshUntil > now) return held;
  const pending = inFlight.get(url);
  if (pending) return pending;
  const request = slot(async () => {
    const headers: Record<string, string> = { Accept: 'application/json' };
    if (held?.etag) headers['If-None-Match'] = held.etag;
    const response = await fetch(url, { headers, signal: AbortSignal.timeout(10_000) }).catch((error: Error) => {
      throw new ServiceError(`could not read ${new URL(url).pathname}: ${error.message}`, { cause: error });
    });
    const freshUntil = Date.now() + maxAgeMs(response.headers.get('cache-control'));
    if (response.status === 304 && held) return { ...held, freshUntil };
    const answer = { status: response.status, body: await response.text(), etag: response.headers.get('etag'), freshUntil };
    if (answer.status === 200) {
      kept.delete(url);
      kept.set(url, answer);
      if (kept.size > MAX_KEPT) kept.delete(kept.keys().next().value!);
    }
    return answer;
  }).finally(() => inFlight.delete(url));
  inFlight.set(url, request);
  return request;
}

const client = hc<AppType>(SERVICE_URL, {
  fetch: async (input: RequestInfo | URL) => {
    const answer = await read(input instanceof Request ? input.url : String(input));
    return new Response(answer.status === 304 ? null : answer.body, { status: answer.status, headers: { 'Content-Type': 'application/json' } });
  },
});

export interface ArchivePage {
  issues: IssueSummary[];
  total: number;
  number: number;
  pages: number;
  newer: number | null;
  older: number | null;
}

/** Page `number` (from 1) of the archive, or of one category; undefined past the last page. */
export async function archivePage(number: number, category?: string): Promise<ArchivePage | undefined> {
  const query = { limit: String(PAGE_SIZE), offset: String((number - 1) * PAGE_SIZE), ...(category ? { category } : {}) };
  const response = await client.api.issues.$get({ query });
  if (response.status === 422) return undefined;
  if (response.status !== 200) throw new ServiceError(`GET /api/issues answered ${response.status}`);
  const { data, meta } = await response.json();
  const pages = Math.max(1, Math.ceil(meta.total / PAGE_SIZE));
  if (number > pages) return undefined;
  // The service names the neighbouring offsets where it can (meta.nextOffset, meta.previousOffset).
  const offsets = meta as typeof meta & { nextOffset?: number | null; previousOffset?: number | null };
  const next = offsets.nextOffset !== undefined ? offsets.nextOffset : number < pages ? number * PAGE_SIZE : null;
  const previous = offsets.previousOffset !== undefined ? offsets.previousOffset : number > 1 ? (number - 2) * PAGE_SIZE : null;
  return {
    issues: data,
    total: meta.total,
    number,
    pages,
    older: next === null ? null : Math.floor(next / PAGE_SIZE) + 1,
    newer: previous === null ? null : Math.floor(previous / PAGE_SIZE) + 1,
  };
}

/** One issue with its letter (as the service gives it), or undefined when there is none by that slug. */
export async function issue(slug: string): Promise<IssueDetail | undefined> {
  const response = await client.api.issues[':slug'].$get({ param: { slug } });
  // A typed error answer: the 404 (and the 422 of a slug that cannot be one) are "no such issue".
  if (response.status === 404 || response.status === 422) return undefined;
  if (response.status !== 200) throw new ServiceError(`GET /api/issues/${slug} answered ${response.status}`);
  return (await response.json()).data;
}

/** The categories, with their number of issues where the service counts them. */
export async function categories(): Promise<(PublicCategory & { count?: number })[]> {
  const response = await client.api.categories.$get();
  if (response.status !== 200) throw new ServiceError(`GET /api/categories answered ${response.status}`);
  return (await response.json()).data;
}

/** `/`, `/page/2/`: the page number of a rest parameter (`undefined`, `page/2`), or undefined for any other path. */
export function pageNumberOf(param: string | undefined): number | undefined {
  if (param === undefined || param === '') return 1;
  const match = /^page\/([1-9]\d{0,5})$/.exec(param);
  return match && Number(match[1]) > 1 ? Number(match[1]) : undefined;
}

/** The rest parameter of page `number`. */
export function pageParam(number: number): string | undefined {
  return number === 1 ? undefined : `page/${number}`;
}
