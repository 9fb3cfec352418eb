import { Hono, type Context, type MiddlewareHandler } from 'hono';
import { ApiError, type ErrorAnswer, type RouteErrorStatus } from '../http/errors.js';
import { sendRead, sendRendered, waitUntilOf, type ReadAnswer } from '../http/read-reply.js';
import type { ArchivePageBody, IssueBody } from '../public-shapes.js';
import type { ArchiveFeeds, FeedFormat } from '../reads/archive-feeds.js';
import type { PublicReads } from '../reads/public-reads.js';
import { MEDIA_TYPES, negotiateFormat } from './archive-format.js';
import { ARCHIVE_VARY, type ArchiveQueries, type ArchiveRequest } from './archive-query.js';
import { SLUG_PATTERN, SLUG_RULE } from '../slug.js';

export interface IssuesRoutesOptions {
  reads: PublicReads;
  cacheControl: string;
  /** The archive query's validation, shared with Node's fresh-read path. */
  archiveQueries: ArchiveQueries;
  /** The archive's Atom and RSS representations; without them (no SITE_ISSUE_URL) a feed request is a 404. */
  feeds?: ArchiveFeeds | undefined;
  /** The visitor's IP, charged for the upstream reads the request causes. */
  clientIp?: (c: Context) => string | undefined;
}

/**
 * The archive query as `hc` sends it: each parameter of the schema (archive-query.ts) as optional
 * text (limit 20, offset 0 when absent). `format` is left out: the typed client reads JSON, and a
 * feed is not what its `json()` would promise.
 */
type ArchiveQueryInput = { [Parameter in Exclude<keyof ArchiveRequest, 'format'>]?: string };

type ArchiveQueryValidator = MiddlewareHandler<{}, '/issues', { in: { query: ArchiveQueryInput }; out: { query: ArchiveRequest } }>;

/** Hono's `validator('query')` copies the parsed query before the memo could be asked. */
function createArchiveQueryValidator(queries: ArchiveQueries): ArchiveQueryValidator {
  return async function validateArchiveQuery(c, next) {
    const url = c.req.url;
    const at = url.indexOf('?');
    c.req.addValidatedData(
      'query',
      queries.validate(at === -1 ? '' : url.slice(at + 1), () => c.req.queries()),
    );
    await next();
  };
}

type FeedNegotiation = MiddlewareHandler<{}, '/issues', { out: { query: ArchiveRequest } }>;

/**
 * Answers the feed representations of the archive before the JSON handler runs; a JSON request
 * passes through. A middleware, so the handler's typed JSON answer stays what `hc` infers.
 */
function createFeedNegotiation(feeds: ArchiveFeeds | undefined, cacheControl: string): FeedNegotiation {
  return async function serveFeed(c, next) {
    const query = c.req.valid('query');
    const format = negotiateFormat(c, query.format);
    if (format === 'json') return next();
    if (!feeds) {
      throw new ApiError('NOT_FOUND', { message: 'Feeds are off: this service has no SITE_ISSUE_URL to link issues to.' });
    }
    const read = await feeds.feed(query, format satisfies FeedFormat, waitUntilOf(c));
    return sendRendered(c, read, `${MEDIA_TYPES[format]}; charset=utf-8`, cacheControl, ARCHIVE_VARY);
  };
}

/** GET /api/issues and GET /api/issues/:slug (docs/contract.md "The four public routes"). */
export function createIssuesRoutes(options: IssuesRoutesOptions) {
  const { reads, cacheControl, clientIp = () => undefined } = options;

  return new Hono()
    .get(
      '/issues',
      createArchiveQueryValidator(options.archiveQueries),
      createFeedNegotiation(options.feeds, cacheControl),
      // The error answers are typed for `hc` (ROUTE_ERRORS); the app's onError renders them.
      async function listIssues(c): Promise<ReadAnswer<ArchivePageBody> | ErrorAnswer<RouteErrorStatus<'/api/issues'>>> {
        const read = await reads.archivePage(c.req.valid('query'), waitUntilOf(c), clientIp(c));
        return sendRead(c, read, cacheControl, ARCHIVE_VARY);
      },
    )
    .get('/issues/:slug', async function getIssue(c): Promise<ReadAnswer<IssueBody> | ErrorAnswer<RouteErrorStatus<'/api/issues/:slug'>>> {
      // Hono has already percent-decoded the parameter, so `%2F`, `%00` or `%2E%2E` arrive
      // as the characters themselves and fail the pattern; a double encoding keeps a `%`.
      const slug = c.req.param('slug');
      if (!SLUG_PATTERN.test(slug)) {
        throw new ApiError('VALIDATION_ERROR', { details: [{ path: 'slug', message: `slug ${SLUG_RULE}` }] });
      }
      const read = await reads.issue(slug, waitUntilOf(c), clientIp(c));
      return sendRead(c, read, cacheControl);
    });
}
