import { SLUG_PLACEHOLDER, type Config } from '../config/config.js';
import { renderAtomFeed, latestUpdate, renderRssFeed } from '../feeds/feeds.js';
import { PAGE_SIZE } from '../routes/archive-query.js';
import { archivePageOf, createIndexRenders, type ArchiveQuery, type PublicRead, type PublicReads } from './public-reads.js';
import type { Requester } from './read-through-cache.js';
import { renderBody, type BodyEncoder } from './rendered-json.js';

interface ArchiveFeedsOptions extends Pick<Config, 'publicationName' | 'publicBaseUrl'> {
  reads: Pick<PublicReads, 'archiveIndex'>;
  siteIssueUrl: string;
  maxBytes: number;
  encodeBody?: BodyEncoder | undefined;
}

export type ArchiveFeeds = ReturnType<typeof createArchiveFeeds>;

const RENDERERS = { atom: renderAtomFeed, rss: renderRssFeed };
type FeedFormat = keyof typeof RENDERERS;

export function createArchiveFeeds({ reads, siteIssueUrl, publicationName, publicBaseUrl, maxBytes, encodeBody }: ArchiveFeedsOptions) {
  const issueUrl = (slug: string) => siteIssueUrl.replaceAll(SLUG_PLACEHOLDER, encodeURIComponent(slug));
  const siteUrl = new URL('/', issueUrl('slug')).href;
  const siteName = publicationName ?? new URL(siteUrl).host;
  const rendered = createIndexRenders(maxBytes, (index, query, format: FeedFormat) => {
    const { issues } = archivePageOf(index, query);
    const categoryName = query.category === undefined ? undefined : index.byCategory.get(query.category)?.[0]?.category?.name;
    const body = RENDERERS[format](issues, {
      issueUrl,
      ...(publicBaseUrl === undefined ? {} : { feedUrl: selfLink(publicBaseUrl, query, format) }),
      siteUrl,
      title: [siteName, categoryName, query.q === undefined ? undefined : `search for “${query.q}”`].filter(Boolean).join(': '),
      author: siteName,
      updated: latestUpdate(issues),
    });
    return renderBody(body, encodeBody);
  });

  return {
    async feed<R>(query: ArchiveQuery, format: FeedFormat, request?: R, requester?: Requester<R>): Promise<PublicRead> {
      const { index, state, ageSeconds, staleReason } = await reads.archiveIndex(request, requester);
      return { rendered: await rendered.rendered(index, query, format), state, ageSeconds, staleReason };
    },

    stats: () => ({ renderedFeeds: rendered.stats().size, renderedFeedBytes: rendered.stats().calculatedSize }),
  };
}

/** Never from the `Host` header, which the client writes. */
function selfLink(publicBaseUrl: string, query: ArchiveQuery, format: FeedFormat): string {
  const params = new URLSearchParams({ format });
  if (query.category !== undefined) params.set('category', query.category);
  if (query.q !== undefined) params.set('q', query.q);
  if (query.limit !== PAGE_SIZE.fallback) params.set('limit', String(query.limit));
  if (query.offset > 0) params.set('offset', String(query.offset));
  return `${publicBaseUrl}/api/issues?${params}`;
}
