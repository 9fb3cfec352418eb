import { Hono, type Context } from 'hono';
import { createReadReplies, waitUntilOf, type JsonResponse, type NotModified } from '../http/read-reply.js';
import type { Pipeline } from '../http/pipeline.js';
import type { RequestHeader } from '../http/request-header.js';
import type { HeaderRules } from '../http/response-headers.js';
import type { CategoriesBody } from '../public-shapes.js';
import type { PublicReads } from '../reads/public-reads.js';
import { andThen, type MaybePromise } from '../reads/read-through-cache.js';

/** GET /api/categories: `[{ name, slug }]` sorted by name. */
export function createCategoriesRoutes(options: {
  reads: PublicReads;
  headerRules: HeaderRules;
  /** `Cache-Control` of the categories (reads/cache-policies.ts). */
  cacheControl: string;
  /** The visitor's IP, charged for the upstream reads the request causes (asked only then). */
  clientIp?: (c: Context) => string | undefined;
  requestHeader: RequestHeader;
  /** The handler with what every answer gets (core/http/pipeline.ts). */
  serve: Pipeline['route'];
}) {
  const { reads, serve, clientIp = () => undefined } = options;
  const sendCategories = createReadReplies(options.headerRules, { contentType: 'application/json', cacheControl: options.cacheControl }, options.requestHeader);
  return new Hono().get(
    '/categories',
    serve(function listCategories(c: Context<{}, '/categories'>): MaybePromise<JsonResponse<CategoriesBody> | NotModified> {
      return andThen(reads.categories(waitUntilOf(c), () => clientIp(c)), (read) => sendCategories(c, read));
    }),
  );
}
