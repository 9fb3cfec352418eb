import { Hono, type Context } from 'hono';
import { ApiError } from '../http/errors.js';
import type { Pipeline } from '../http/pipeline.js';
import { createReadReplies, waitUntilOf, type RequestHeader } from '../http/read-reply.js';
import type { Requester } from '../reads/read-through-cache.js';
import type { HeaderRules } from '../http/response-headers.js';
import type { ArchiveFeeds } from '../reads/archive-feeds.js';
import type { PublicReads } from '../reads/public-reads.js';
import { cacheControlOf, type CachePolicies } from '../reads/cache-policies.js';
import { MEDIA_TYPES, negotiateFormat } from './archive-format.js';
import { ARCHIVE_VARY, type ArchiveQueries, type ArchiveRequest } from './archive-query.js';

type ArchiveInput = { in: { query: { [Parameter in Exclude<keyof ArchiveRequest, 'format'>]?: string } }; out: { query: ArchiveRequest } };

export function createReadRoutes(options: {
  reads: PublicReads;
  headerRules: HeaderRules;
  policies: CachePolicies;
  archiveQueries: ArchiveQueries;
  feeds: ArchiveFeeds | undefined;
  clientIp: (c: Context) => string | undefined;
  requestHeader: RequestHeader;
  pipeline: Pipeline;
}) {
  const { reads, headerRules, policies, archiveQueries, feeds, pipeline, requestHeader, clientIp } = options;
  const replies = (read: keyof CachePolicies, contentType = 'application/json', vary?: string) =>
    createReadReplies(headerRules, { contentType, cacheControl: cacheControlOf(policies[read]), vary }, requestHeader);
  const sendArchive = replies('archive', 'application/json', ARCHIVE_VARY);
  const feedReplies = (format: 'atom' | 'rss') => replies('archive', `${MEDIA_TYPES[format]}; charset=utf-8`, ARCHIVE_VARY);
  const sendFeed = { atom: feedReplies('atom'), rss: feedReplies('rss') };

  // Made once: a read asks it of the request only when it loads.
  const requester: Requester<Context> = { waitUntil: waitUntilOf, client: clientIp };

  return new Hono()
    .get(
      '/issues',
      pipeline.read('/api/issues', sendArchive, (c: Context<{}, '/issues', ArchiveInput>, requestId) => {
        const url = c.req.url;
        const at = url.indexOf('?');
        const query = archiveQueries.validate(at === -1 ? '' : url.slice(at + 1), () => c.req.queries());
        const format = negotiateFormat(c, query.format, requestHeader(c, 'accept'));
        if (format === 'json') return reads.archivePage(query, c, requester);
        if (!feeds) throw new ApiError('NOT_FOUND', { message: 'Feeds are off: this service has no SITE_ISSUE_URL to link issues to.' });
        return feeds.feed(query, format, c, requester).then((read) => {
          c.set('cacheState', read.state);
          c.set('staleReason', read.staleReason);
          return sendFeed[format](c, read, requestId);
        });
      }),
    )
    .get(
      '/issues/:slug',
      pipeline.read('/api/issues/:slug', replies('issue'), (c: Context<{}, '/issues/:slug'>) => {
        // Percent-decoded by Hono, so `%2F` or `%2E%2E` fail the slug pattern; a double encoding keeps a `%`.
        return reads.issue(c.req.param('slug'), c, requester);
      }),
    )
    .get(
      '/categories',
      pipeline.read('/api/categories', replies('categories'), (c: Context<{}, '/categories'>) => reads.categories(c, requester)),
    );
}
