import { Hono, type Context } from 'hono';
import { sendRead, waitUntilOf } from '../http/read-reply.js';
import type { PublicReads } from '../reads/public-reads.js';

/** GET /api/categories: `[{ name, slug }]` sorted by name. */
export function createCategoriesRoutes(options: {
  reads: PublicReads;
  cacheControl: string;
  /** The visitor's IP, charged for the upstream reads the request causes. */
  clientIp?: (c: Context) => string | undefined;
}) {
  const { reads, cacheControl, clientIp = () => undefined } = options;
  return new Hono().get('/categories', async function listCategories(c) {
    return sendRead(c, await reads.categories(waitUntilOf(c), clientIp(c)), cacheControl);
  });
}
