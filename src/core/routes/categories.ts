import { Hono, type Context } from 'hono';
import type { ErrorAnswer, RouteErrorStatus } from '../http/errors.js';
import { sendRead, waitUntilOf, type ReadAnswer } from '../http/read-reply.js';
import type { CategoriesBody } from '../public-shapes.js';
import type { PublicReads } from '../reads/public-reads.js';

/** GET /api/categories: `[{ name, slug }]` sorted by name. */
export function createCategoriesRoutes(options: {
  reads: PublicReads;
  cacheControl: string;
  /** The visitor's IP, charged for the upstream reads the request causes. */
  clientIp?: (c: Context) => string | undefined;
}) {
  const { reads, cacheControl, clientIp = () => undefined } = options;
  // The error answers are typed for `hc` (ROUTE_ERRORS); the app's onError renders them.
  return new Hono().get('/categories', async function listCategories(c): Promise<
    ReadAnswer<CategoriesBody> | ErrorAnswer<RouteErrorStatus<'/api/categories'>>
  > {
    return sendRead(c, await reads.categories(waitUntilOf(c), clientIp(c)), cacheControl);
  });
}
