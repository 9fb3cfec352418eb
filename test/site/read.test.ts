import { describe, expect, it } from 'vitest';
import { readPublication, SiteReadError } from '../../src/tools/site/read.js';
import { API_URL, createDefaultService, createDemoService } from './site-support.js';

const busy = (status: number, headers: Record<string, string> = {}) =>
  Response.json({ ok: false, error: { code: 'UPSTREAM_UNAVAILABLE', message: 'busy' } }, { status, headers });

/** A service that answers `refusals` in turn, then reads the demo. */
function refusingThenDemo(refusals: (() => Response)[]) {
  const demo = createDemoService();
  const waits: number[] = [];
  let calls = 0;
  const fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
    calls++;
    return refusals.shift()?.() ?? demo.fetch(input, init);
  }) as typeof globalThis.fetch;
  const sleep = async (ms: number) => {
    waits.push(ms);
  };
  return { fetch, sleep, waits, calls: () => calls };
}

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
    await expect(readPublication({ apiUrl: API_URL, fetch })).rejects.toThrow(`could not read /api/issues from ${API_URL}: fetch failed`);
  });

  it('waits the Retry-After of a 503 or 429 and asks again, then reads on', async () => {
    const service = refusingThenDemo([() => busy(503, { 'Retry-After': '7' }), () => busy(429, { 'Retry-After': '2' }), () => busy(429)]);
    const { issues } = await readPublication({ apiUrl: API_URL, fetch: service.fetch, sleep: service.sleep });
    expect(issues).toHaveLength(48);
    // 429 without Retry-After: the first wait of the doubling one.
    expect(service.waits).toEqual([7_000, 2_000, 4_000]);
  });

  it('reads a Retry-After date against its clock, and never waits more than a minute at once', async () => {
    const now = () => Date.parse('2026-01-01T00:00:00Z');
    const service = refusingThenDemo([
      () => busy(503, { 'Retry-After': 'Thu, 01 Jan 2026 00:00:30 GMT' }),
      () => busy(503, { 'Retry-After': '86400' }),
    ]);
    await readPublication({ apiUrl: API_URL, fetch: service.fetch, sleep: service.sleep, now });
    expect(service.waits).toEqual([30_000, 60_000]);
  });

  it('gives up after five retries of one read and names the last answer, so a build always ends', async () => {
    const service = refusingThenDemo(Array.from({ length: 20 }, () => () => busy(503, { 'Retry-After': '1' })));
    await expect(readPublication({ apiUrl: API_URL, fetch: service.fetch, sleep: service.sleep })).rejects.toThrow(
      new SiteReadError('GET /api/issues answered 503'),
    );
    expect(service.waits).toEqual([1_000, 1_000, 1_000, 1_000, 1_000]);
    expect(service.calls()).toBe(6);
  });

  it('does not retry a 503 that names no wait (an upstream failure, not a busy answer), nor a 502', async () => {
    for (const status of [502, 503]) {
      const service = refusingThenDemo([() => busy(status)]);
      await expect(readPublication({ apiUrl: API_URL, fetch: service.fetch, sleep: service.sleep })).rejects.toThrow(`answered ${status}`);
      expect(service.waits).toEqual([]);
    }
  });

  it('reads the whole demo from a service with every setting at its default', async () => {
    const service = createDefaultService();
    const { issues } = await readPublication({ apiUrl: API_URL, fetch: service.fetch, sleep: service.sleep, now: service.now });
    expect(issues).toHaveLength(48);
    expect(issues.every((issue) => typeof issue.contentHtml === 'string')).toBe(true);
    // Listed issues open from the list rows: nothing is refused, nothing waited for.
    expect(service.statuses.filter((status) => status !== 200)).toEqual([]);
    expect(service.waits).toEqual([]);
  });
});
