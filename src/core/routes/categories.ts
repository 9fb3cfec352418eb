import { Hono, type Context } from 'hono';
import type { Pipeline } from '../http/pipeline.js';
import { createReadReplies, waitUntilOf } from '../http/read-reply.js';
import type { RequestHeader } from '../http/request-header.js';
import type { HeaderRules } from '../http/response-headers.js';
import type { PublicReads } from '../reads/public-reads.js';

/** GET /api/categories: `[{ name, slug, count }]` sorted by name. */
export function createCategoriesRoutes(options: {
  reads: PublicReads;
  headerRules: HeaderRules;
  /** `Cache-Control` of the categories (reads/cache-policies.ts). */
  cacheControl: string;
  /** The visitor's IP, charged for the upstream reads the request causes (asked only then). */
  clientIp?: (c: Context) => string | undefined;
  requestHeader: RequestHeader;
  /** The pipeline every answer goes through (core/http/pipeline.ts). */
  pipeline: Pipeline;
}) {
  const { reads, pipeline, clientIp = () => undefined } = options;
  const sendCategories = createReadReplies(
    options.headerRules,
    { contentType: 'application/json', cacheControl: options.cacheControl },
    options.requestHeader,
  );
  // The error answers are typed for `hc` (ROUTE_ERRORS, by the route named); the pipeline renders them.
  return new Hono().get(
    '/categories',
    pipeline.read('/api/categories', sendCategories, function listCategories(c: Context<{}, '/categories'>) {
      return reads.categories(waitUntilOf(c), () => clientIp(c));
    }),
  );
}
