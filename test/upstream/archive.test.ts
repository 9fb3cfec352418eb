import { describe, it, expect } from 'vitest';
import { readWholeArchive } from '../../src/upstream/archive.js';
import { DEFAULT_LIST_PAGING } from '../../src/upstream/assumptions.js';
import type { PagePosition } from '../../src/upstream/archive.js';
import type { UpstreamIssue } from '../../src/upstream/schemas.js';
import { createLogCapture, jsonResponse, TEST_BASE_URL, type FetchHandler } from '../helpers.js';
import { errorBody, failureOf, setupClient, upstreamIssue } from './fixtures.js';

describe('reading the whole archive', () => {
  it('reads the whole archive with status=sent&isPublic=true', async () => {
    const { client, calls } = setupClient(() => jsonResponse({ ok: true, data: [] }));
    await client.listAllPublicIssues(5000);
    expect(calls.map((call) => call.url.href)).toEqual([
      `${TEST_BASE_URL}/newsletter/issues?status=sent&isPublic=true&limit=200&offset=0`,
    ]);
  });

  /** An upstream whose List Issues pages through `archive` by limit and offset. */
  function pagedArchive(size: number, options: { ignoreOffset?: boolean } = {}): FetchHandler {
    const archive = Array.from({ length: size }, (_, index) => upstreamIssue(index + 1));
    return (call) => {
      const limit = Number(call.url.searchParams.get('limit'));
      const offset = options.ignoreOffset ? 0 : Number(call.url.searchParams.get('offset'));
      return jsonResponse({ ok: true, data: archive.slice(offset, offset + limit) });
    };
  }

  const pageParams = (calls: { url: URL }[]) =>
    calls.map((call) => Object.fromEntries(call.url.searchParams.entries()));

  it('reads an archive of 230 issues at offsets 0, 200 and 230: a short page is not taken as the end', async () => {
    const { client, calls } = setupClient(pagedArchive(230));
    const issues = await client.listAllPublicIssues(5000);
    expect(issues).toHaveLength(230);
    expect(issues[0]?.id).toBe('iss_0001');
    expect(issues[229]?.id).toBe('iss_0230');
    expect(new Set(issues.map((issue) => issue.id)).size).toBe(230);
    expect(pageParams(calls)).toEqual([
      { status: 'sent', isPublic: 'true', limit: '200', offset: '0' },
      { status: 'sent', isPublic: 'true', limit: '200', offset: '200' },
      { status: 'sent', isPublic: 'true', limit: '200', offset: '230' },
    ]);
  });

  it('asks once more after a full last page and stops at the empty page (400 issues: 3 calls)', async () => {
    const { client, calls } = setupClient(pagedArchive(400));
    expect(await client.listAllPublicIssues(5000)).toHaveLength(400);
    expect(pageParams(calls).map((params) => params.offset)).toEqual(['0', '200', '400']);
  });

  it('stops after the page that adds nothing new when the upstream ignores offset (2 calls)', async () => {
    const { client, calls } = setupClient(pagedArchive(1000, { ignoreOffset: true }));
    const issues = await client.listAllPublicIssues(5000);
    expect(issues).toHaveLength(200);
    expect(calls).toHaveLength(2);
  });

  it('stops at maxIssues, keeping the first ones read', async () => {
    const { client, calls } = setupClient(pagedArchive(1000));
    const issues = await client.listAllPublicIssues(250);
    expect(issues).toHaveLength(250);
    expect(issues[249]?.id).toBe('iss_0250');
    expect(calls).toHaveLength(2);
  });

  it('makes one call when maxIssues is reached by the first full page', async () => {
    const { client, calls } = setupClient(pagedArchive(1000));
    expect(await client.listAllPublicIssues(200)).toHaveLength(200);
    expect(calls).toHaveLength(1);
  });

  it('makes one call and returns nothing for an empty archive', async () => {
    const { client, calls } = setupClient(pagedArchive(0));
    expect(await client.listAllPublicIssues(5000)).toEqual([]);
    expect(calls).toHaveLength(1);
  });

  it('fails the whole read when a later page fails', async () => {
    const archive = pagedArchive(300);
    const { client, calls } = setupClient((call, index) => (index === 1 ? jsonResponse(errorBody('UNAUTHORIZED'), 401) : archive(call, index)));
    expect((await failureOf(client.listAllPublicIssues(5000))).kind).toBe('auth');
    expect(calls).toHaveLength(2);
  });

  it('keeps one copy of an issue that appears on two pages, and moves on by the rows received', async () => {
    const positions: PagePosition[] = [];
    const row = (n: number) => ({ id: `iss_${n}`, subject: `Issue ${n}`, status: 'sent' }) as UpstreamIssue;
    const pages = [Array.from({ length: 200 }, (_, i) => row(i)), [row(199), row(200), row(201)]];
    const read = await readWholeArchive(
      async (position) => {
        positions.push(position);
        return { rows: pages[positions.length - 1] ?? [], droppedIds: [] };
      },
      DEFAULT_LIST_PAGING,
      5000,
    );
    expect(read.issues.map((issue) => issue.id)).toEqual(Array.from({ length: 202 }, (_, i) => `iss_${i}`));
    expect(positions.map((position) => position.offset)).toEqual([0, 200, 203]);
    expect(read.findings).toEqual([]);
  });
});
