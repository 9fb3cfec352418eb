/**
 * `newsletter-bff/astro`: a loader for Astro's content layer (Astro 5 and later), so that a site
 * built with Astro has one entry per public issue of a newsletter-bff service:
 *
 *     // src/content.config.ts
 *     import { defineCollection } from 'astro:content';
 *     import { newsletterLoader } from 'newsletter-bff/astro';
 *     export const collections = { issues: defineCollection({ loader: newsletterLoader({ url: 'https://news-api.example.com' }) }) };
 *
 * It reads the service as a browser does (the archive, then each issue by slug), never the
 * upstream. Nothing of Astro is imported: its loader API is declared here (the part used), so
 * this module loads in plain Node, and Astro stays an optional peer of the package. The entries'
 * schema is built with zod's version 3 API (`zod/v3`, the zod Astro 5's content layer runs on).
 * docs/frameworks.md "Astro" says how a site uses it.
 */
import { z } from 'zod/v3';
import { importOptional } from '../node/optional-package.js';
import type { IssueDetail, IssueSummary } from '../core/public-shapes.js';
import { createReadClient, DEFAULT_CONCURRENCY, mapWithConcurrency, readArchive, SiteReadError } from '../tools/site/read.js';

/** A neighbouring issue in archive order, as an issue page names it (`newer`, `older`). */
export interface IssueNeighbour {
  slug: string;
  subject: string;
  sentAt: string | null;
}

/**
 * One entry's `data`: the issue's public fields without its HTML, which is the entry's
 * `rendered.html` (Astro's `render(entry)`). The optional fields are those a newer service adds;
 * any other field it adds is kept as it comes.
 */
export type NewsletterIssueData = Omit<IssueDetail, 'contentHtml'> & {
  updatedAt?: string | null;
  readingMinutes?: number | null;
  newer?: IssueNeighbour | null;
  older?: IssueNeighbour | null;
  [field: string]: unknown;
};

/** An entry of Astro's data store, as far as this loader writes and reads it. */
export interface NewsletterEntry {
  id: string;
  data: Record<string, unknown>;
  digest?: number | string;
  rendered?: { html: string };
}

/**
 * The part of Astro's `LoaderContext` (astro/loaders) this loader uses, declared here so that
 * nothing of Astro is needed to load or typecheck it; Astro's own context fits it.
 */
export interface NewsletterLoaderContext {
  collection: string;
  store: {
    get(id: string): NewsletterEntry | undefined;
    set(entry: NewsletterEntry): boolean;
    keys(): string[];
    delete(id: string): void;
  };
  /** A per-collection store of strings kept between builds: the sync state lives there. */
  meta: { get(key: string): string | undefined; set(key: string, value: string): void };
  logger: { info(message: string): void; warn(message: string): void };
  parseData<TData extends Record<string, unknown>>(props: { id: string; data: TData }): Promise<TData>;
  generateDigest(data: Record<string, unknown> | string): string;
}

export interface NewsletterLoaderOptions {
  /** The service's address, e.g. https://news-api.example.com (its /api/ routes are read). */
  url: string;
  /**
   * Turns a letter's HTML into the entry's `rendered.html`. By default the site builder's
   * sanitiser (`sanitizeLetter` of `newsletter-bff/sanitize`, which needs the package
   * sanitize-html): the letter is the newsletter service's HTML, shown on the site's own origin.
   * `false` keeps it as the service gives it (show it sandboxed, or sanitise it yourself).
   */
  sanitize?: ((html: string, issue: NewsletterIssueData) => string) | false;
  /** Issue pages read at once (default 4): a build is one visitor, not a crowd. */
  concurrency?: number;
  /** Test seams: the fetch, the waits before a retry and the clock a `Retry-After` date is read against. */
  fetch?: typeof globalThis.fetch;
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
}

/** What Astro's `defineCollection({ loader })` takes (astro/loaders `Loader`). */
export interface NewsletterLoader {
  name: string;
  load(context: NewsletterLoaderContext): Promise<void>;
  /**
   * The entries' data as a zod schema (zod's version 3 API, `zod/v3`), for Astro to validate and
   * type them. Declared loosely on purpose: each Astro version compares it with its own zod's
   * declarations, which no one type of ours can match (`NewsletterIssueData` is its type).
   */
  schema: () => Promise<any>;
}

/** The meta key of the sync state, and the shape it is kept in (JSON). */
const STATE_KEY = 'newsletter-bff:sync';
interface SyncState {
  version: 1;
  url: string;
  /** Per issue: the `ETag` of its page, and its `updatedAt` where the service gives one. */
  issues: Record<string, { etag?: string; updatedAt?: string | null }>;
}

const CATEGORY = z.object({ name: z.string(), slug: z.string() }).passthrough();
const NEIGHBOUR = z.object({ slug: z.string(), subject: z.string(), sentAt: z.string().nullable() });

/** The schema of `NewsletterIssueData`; fields a newer service adds pass through. */
function issueSchema(): z.ZodType<NewsletterIssueData> {
  return z
    .object({
      slug: z.string(),
      subject: z.string(),
      previewText: z.string().nullable(),
      thumbnailUrl: z.string().nullable(),
      sentAt: z.string().nullable(),
      category: CATEGORY.nullable(),
      updatedAt: z.string().nullable().optional(),
      readingMinutes: z.number().nullable().optional(),
      newer: NEIGHBOUR.nullable().optional(),
      older: NEIGHBOUR.nullable().optional(),
    })
    .passthrough() as z.ZodType<NewsletterIssueData>;
}

/**
 * The loader. Each build reads the archive (a page per 100 issues) and brings the entries up to
 * date from the sync state the previous build left in `meta`: an issue whose `updatedAt` is
 * unchanged is not read again (its summary fields and neighbours are refreshed from the archive);
 * any other issue already held is asked for with `If-None-Match`, so an unchanged one costs a
 * 304 and no body; a new one is read whole; an issue that left the archive is removed.
 */
export function newsletterLoader(options: NewsletterLoaderOptions): NewsletterLoader {
  // Its routes are under /api/ of this address (a service behind a path prefix keeps the prefix).
  const url = new URL(options.url).href.replace(/\/+$/, '');
  return {
    name: 'newsletter-bff',
    schema: async () => issueSchema(),
    async load(context) {
      const { store, meta, logger, parseData, generateDigest } = context;
      const client = createReadClient({
        apiUrl: url,
        fetch: options.fetch,
        sleep: options.sleep,
        now: options.now,
        onWait: ({ path, status, ms }) => logger.info(`${path} answered ${status}: reading it again in ${Math.ceil(ms / 1000)} s`),
      });
      const sanitize = options.sanitize ?? (await defaultSanitizer());
      const previous = readState(meta.get(STATE_KEY), url);
      const summaries = await readArchive(client);
      const next: SyncState = { version: 1, url, issues: {} };
      const counts = { read: 0, unchanged: 0, removed: 0 };

      /** Writes an entry; `letter` gives its rendered HTML from its parsed data. */
      const write = async (fields: Record<string, unknown>, letter: (data: NewsletterIssueData) => { html: string } | undefined) => {
        const id = String(fields.slug);
        const data = (await parseData({ id, data: fields })) as NewsletterIssueData;
        const rendered = letter(data);
        store.set({ id, data, digest: generateDigest({ data, html: rendered?.html ?? null }), ...(rendered ? { rendered } : {}) });
      };

      await mapWithConcurrency(summaries, options.concurrency ?? DEFAULT_CONCURRENCY, async (summary, index) => {
        const held = store.get(summary.slug);
        const known = previous?.issues[summary.slug];
        const updatedAt = updatedAtOf(summary);
        const keep = (entry: NewsletterEntry) => {
          next.issues[summary.slug] = { ...known, updatedAt };
          counts.unchanged++;
          const neighbours = { newer: neighbourOf(summaries[index - 1]), older: neighbourOf(summaries[index + 1]) };
          return write(refreshed(entry.data, summary, neighbours), () => entry.rendered);
        };
        if (held && known && updatedAt != null && known.updatedAt === updatedAt) return keep(held);
        // The uncompressed copy: its ETag is the one every instance of the service gives, whether or
        // not a compressed copy exists yet, so the next build's If-None-Match still names it.
        const headers: Record<string, string> = { 'Accept-Encoding': 'identity' };
        if (held && known?.etag) headers['If-None-Match'] = known.etag;
        const response = await client.api.issues[':slug'].$get({ param: { slug: summary.slug } }, { headers });
        if (response.status === 304 && held) return keep(held);
        // Unpublished between the archive's read and this one: it is left out, as the next archive will leave it.
        if (response.status === 404) return;
        if (response.status !== 200) throw new SiteReadError(`GET /api/issues/${summary.slug} answered ${response.status}`);
        const { contentHtml, ...fields } = (await response.json()).data;
        next.issues[summary.slug] = { etag: response.headers.get('etag') ?? undefined, updatedAt };
        counts.read++;
        return write(fields, (data) => (contentHtml === null ? undefined : { html: sanitize ? sanitize(contentHtml, data) : contentHtml }));
      });

      for (const id of store.keys()) {
        if (next.issues[id]) continue;
        store.delete(id);
        counts.removed++;
      }
      meta.set(STATE_KEY, JSON.stringify(next));
      logger.info(`${summaries.length} issues from ${url}: ${counts.read} read, ${counts.unchanged} unchanged, ${counts.removed} removed`);
    },
  };
}

/** The state the last build left, or undefined when there is none, it is unreadable, or it was of another service. */
function readState(value: string | undefined, url: string): SyncState | undefined {
  if (value === undefined) return undefined;
  try {
    const state = JSON.parse(value) as Partial<SyncState>;
    return state.version === 1 && state.url === url && typeof state.issues === 'object' && state.issues !== null ? (state as SyncState) : undefined;
  } catch {
    return undefined;
  }
}

/** The summary's `updatedAt`, where the service gives one (a field of newer services). */
function updatedAtOf(summary: IssueSummary): string | null | undefined {
  const { updatedAt } = summary as IssueSummary & { updatedAt?: string | null };
  return updatedAt;
}

function neighbourOf(summary: IssueSummary | undefined): IssueNeighbour | null {
  return summary ? { slug: summary.slug, subject: summary.subject, sentAt: summary.sentAt } : null;
}

/**
 * A held entry's data brought up to date without reading its page: the archive's summary fields
 * (a category renamed, a new preview) and, where the service gives neighbours, the neighbours in
 * the archive's order (a new issue makes the last newest one's `newer`).
 */
function refreshed(held: Record<string, unknown>, summary: IssueSummary, neighbours: Pick<NewsletterIssueData, 'newer' | 'older'>) {
  const data: Record<string, unknown> = { ...held, ...summary };
  if ('newer' in held) data.newer = neighbours.newer;
  if ('older' in held) data.older = neighbours.older;
  return data;
}

/** The site builder's sanitiser, loaded when the first build needs it (sanitize-html is an optional peer). */
async function defaultSanitizer(): Promise<(html: string) => string> {
  const { sanitizeLetter } = await importOptional(
    'sanitize-html',
    "newsletterLoader (it sanitises each letter; `sanitize: false` keeps the service's HTML)",
    () => import('../tools/site/sanitize.js'),
  );
  return sanitizeLetter;
}
