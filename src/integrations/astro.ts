// `newsletter-bff/astro`: an Astro 5 content loader, one entry per public issue (docs/frameworks.md "Astro"). Astro's
// loader API is declared here, so Astro stays an optional peer; the schema uses `zod/v3`, Astro 5's zod.
import { z } from 'zod/v3';
import { importOptional } from '../node/optional-package.js';
import type { IssueDetail, IssueNeighbour } from '../core/public-shapes.js';
import * as site from '../tools/site/read.js';

export type { IssueNeighbour };

/** The public fields without the HTML (`rendered.html`); fields a newer service adds are kept. */
export type NewsletterIssueData = Omit<IssueDetail, 'contentHtml'> & { [field: string]: unknown };

export type NewsletterEntry = { id: string; data: Record<string, unknown>; digest?: number | string; rendered?: { html: string } };

export interface NewsletterLoaderContext {
  collection: string;
  store: { get(id: string): NewsletterEntry | undefined; set(entry: NewsletterEntry): boolean; keys(): string[]; delete(id: string): void };
  meta: { get(key: string): string | undefined; set(key: string, value: string): void };
  logger: { info(message: string): void; warn(message: string): void };
  parseData<TData extends Record<string, unknown>>(props: { id: string; data: TData }): Promise<TData>;
  generateDigest(data: Record<string, unknown> | string): string;
}

export interface NewsletterLoaderOptions extends Pick<site.ReadOptions, 'fetch' | 'sleep' | 'now'> {
  url: string;
  /** Default: `sanitizeLetter` of `newsletter-bff/sanitize` (needs sanitize-html); `false` keeps the service's HTML. */
  sanitize?: ((html: string, issue: NewsletterIssueData) => string) | false;
  concurrency?: number;
}

export interface NewsletterLoader {
  name: string;
  load(context: NewsletterLoaderContext): Promise<void>;
  // biome-ignore lint/suspicious/noExplicitAny: each Astro version compares the schema with its own zod's types
  schema: () => Promise<any>;
}

const STATE_KEY = 'newsletter-bff:sync';
type SyncState = { version: 1; url: string; issues: Record<string, { etag?: string; updatedAt?: string | null }> };

function issueSchema(): z.ZodType<NewsletterIssueData> {
  const text = z.string().nullable();
  const neighbour = z.object({ slug: z.string(), subject: z.string(), sentAt: text }).nullable().optional();
  return z
    .object({
      slug: z.string(),
      subject: z.string(),
      previewText: text,
      thumbnailUrl: text,
      sentAt: text,
      category: z.object({ name: z.string(), slug: z.string() }).passthrough().nullable(),
      updatedAt: text.optional(),
      readingMinutes: z.number().nullable().optional(),
      newer: neighbour,
      older: neighbour,
    })
    .passthrough() as z.ZodType<NewsletterIssueData>;
}

// Each build reads the archive, then by the state the previous one left in `meta` only what changed: an unchanged
// `updatedAt` is not read, a held issue is asked with `If-None-Match`, one that left the archive is removed.
export function newsletterLoader(options: NewsletterLoaderOptions): NewsletterLoader {
  const url = new URL(options.url).href.replace(/\/+$/, '');
  return {
    name: 'newsletter-bff',
    schema: async () => issueSchema(),
    async load({ store, meta, logger, parseData, generateDigest }) {
      const client = site.createReadClient({
        ...options,
        apiUrl: url,
        onWait: ({ path, status, ms }) => logger.info(`${path} answered ${status}: reading it again in ${Math.ceil(ms / 1000)} s`),
      });
      const why = "newsletterLoader (it sanitises each letter; `sanitize: false` keeps the service's HTML)";
      const sanitize =
        options.sanitize ?? (await importOptional('sanitize-html', why, () => import('../tools/site/sanitize.js'))).sanitizeLetter;
      const previous = readState(meta.get(STATE_KEY), url);
      const summaries = await site.readArchive(client);
      const next: SyncState = { version: 1, url, issues: {} };
      const counts = { read: 0, unchanged: 0 };

      const write = async (fields: Record<string, unknown>, letter: (data: NewsletterIssueData) => { html: string } | undefined) => {
        const id = String(fields.slug);
        const data = (await parseData({ id, data: fields })) as NewsletterIssueData;
        const rendered = letter(data);
        store.set({ id, data, digest: generateDigest({ data, html: rendered?.html ?? null }), ...(rendered ? { rendered } : {}) });
      };

      await site.mapWithConcurrency(summaries, options.concurrency ?? site.DEFAULT_CONCURRENCY, async (summary, index) => {
        const held = store.get(summary.slug);
        const known = previous?.issues[summary.slug];
        // Absent from an older service.
        const updatedAt: string | null | undefined = summary.updatedAt;
        const keep = (entry: NewsletterEntry) => {
          next.issues[summary.slug] = { ...known, updatedAt };
          counts.unchanged++;
          const data: Record<string, unknown> = { ...entry.data, ...summary };
          if ('newer' in entry.data) data.newer = site.neighbourOf(summaries[index - 1]);
          if ('older' in entry.data) data.older = site.neighbourOf(summaries[index + 1]);
          return write(data, () => entry.rendered);
        };
        if (held && known && updatedAt != null && known.updatedAt === updatedAt) return keep(held);
        // The uncompressed copy's ETag is the same on every instance, compressed copy or not.
        const headers: Record<string, string> = { 'Accept-Encoding': 'identity' };
        if (held && known?.etag) headers['If-None-Match'] = known.etag;
        const response = await client.api.issues[':slug'].$get({ param: { slug: summary.slug } }, { headers });
        if (response.status === 304 && held) return keep(held);
        if (response.status === 404) return;
        if (response.status !== 200) throw new site.SiteReadError(`GET /api/issues/${summary.slug} answered ${response.status}`);
        const { contentHtml, ...fields } = (await response.json()).data;
        next.issues[summary.slug] = { etag: response.headers.get('etag') ?? undefined, updatedAt };
        counts.read++;
        return write(fields, (data) => (contentHtml === null ? undefined : { html: sanitize ? sanitize(contentHtml, data) : contentHtml }));
      });

      const removed = store.keys().filter((id) => !next.issues[id]);
      for (const id of removed) store.delete(id);
      meta.set(STATE_KEY, JSON.stringify(next));
      logger.info(`${summaries.length} issues from ${url}: ${counts.read} read, ${counts.unchanged} unchanged, ${removed.length} removed`);
    },
  };
}

function readState(value: string | undefined, url: string): SyncState | undefined {
  try {
    const state = JSON.parse(value ?? 'null') as Partial<SyncState> | null;
    if (state?.version === 1 && state.url === url && typeof state.issues === 'object' && state.issues !== null) return state as SyncState;
  } catch {}
  return undefined;
}
