import { Hono } from 'hono';
import { sendRead, waitUntilOf } from '../http.js';
import type { PublicReads } from '../reads/public-reads.js';

/** GET /api/categories: `[{ name, slug }]` sorted by name. */
export function createCategoriesRoutes(options: { reads: PublicReads; cacheControl: string }) {
  const { reads, cacheControl } = options;
  return new Hono().get('/categories', async function listCategories(c) {
    return sendRead(c, await reads.categories(waitUntilOf(c)), cacheControl);
  });
}
