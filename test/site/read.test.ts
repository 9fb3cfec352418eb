import { describe, expect, it } from 'vitest';
import { readPublication, SiteReadError } from '../../src/site/read.js';
import { API_URL, createDemoService } from './site-support.js';

describe('readPublication', () => {
  it('reads every issue of the demo through the four routes: archive pages, categories, each issue once', async () => {
    const demo = createDemoService();
    const { issues, categories } = await readPublication({ apiUrl: API_URL, fetch: demo.fetch });
    expect(issues).toHaveLength(48);
    expect(issues.every((issue) => typeof issue.contentHtml === 'string')).toBe(true);
    expect(categories.map((c) => c.slug)).toEqual(['community', 'interviews', 'seasonal-guides', 'tools-and-tech']);
    // One archive page (48 < 100), the categories, and 48 issues.
    expect(demo.requests()).toBe(50);
  });

  it('stops with the route and status when the service does not answer 200, so no half site is written', async () => {
    const fetch = async () => Response.json({ ok: false, error: { code: 'UPSTREAM_UNAVAILABLE', message: 'x' } }, { status: 503 });
    await expect(readPublication({ apiUrl: API_URL, fetch })).rejects.toThrow(new SiteReadError('GET /api/issues answered 503'));
  });

  it('names the route and the service when the service cannot be reached', async () => {
    const fetch = async () => {
      throw new TypeError('fetch failed');
    };
    await expect(readPublication({ apiUrl: API_URL, fetch })).rejects.toThrow(
      `could not read /api/issues from ${API_URL}: fetch failed`,
    );
  });
});
