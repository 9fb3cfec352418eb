import { Hono, type MiddlewareHandler } from 'hono';
import { ApiError } from '../errors.js';
import { sendRead, waitUntilOf } from '../http.js';
import type { ArchiveQuery, PublicReads } from '../reads/public-reads.js';
import { SLUG_PATTERN, SLUG_RULE } from '../slug.js';
import type { ArchiveQueries } from './archive-query.js';

export interface IssuesRoutesOptions {
  reads: PublicReads;
  cacheControl: string;
  /** The archive query's validation, shared with Node's fresh-read path. */
  archiveQueries: ArchiveQueries;
}

type ArchiveQueryValidator = MiddlewareHandler<
  {},
  '/issues',
  // Typed for `hc` as the client sends it: every parameter optional (limit 20, offset 0).
  { in: { query: { limit?: string; offset?: string; category?: string } }; out: { query: ArchiveQuery } }
>;

/** Hono's `validator('query')` copies the parsed query before the memo could be asked. */
function createArchiveQueryValidator(queries: ArchiveQueries): ArchiveQueryValidator {
  return async function validateArchiveQuery(c, next) {
    const url = c.req.url;
    const at = url.indexOf('?');
    c.req.addValidatedData('query', queries.validate(at === -1 ? '' : url.slice(at + 1), () => c.req.queries()));
    await next();
  };
}

/** GET /api/issues and GET /api/issues/:slug (docs/contract.md "The four public routes"). */
export function createIssuesRoutes(options: IssuesRoutesOptions) {
  const { reads, cacheControl } = options;

  return new Hono()
    .get('/issues', createArchiveQueryValidator(options.archiveQueries), async function listIssues(c) {
      const read = await reads.archivePage(c.req.valid('query'), waitUntilOf(c));
      return sendRead(c, read, cacheControl);
    })
    .get('/issues/:slug', async function getIssue(c) {
      // Hono has already percent-decoded the parameter, so `%2F`, `%00` or `%2E%2E` arrive
      // as the characters themselves and fail the pattern; a double encoding keeps a `%`.
      const slug = c.req.param('slug');
      if (!SLUG_PATTERN.test(slug)) {
        throw new ApiError('VALIDATION_ERROR', { details: [{ path: 'slug', message: `slug ${SLUG_RULE}` }] });
      }
      const read = await reads.issue(slug, waitUntilOf(c));
      return sendRead(c, read, cacheControl);
    });
}
