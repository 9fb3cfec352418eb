import { describe, it, expect } from 'vitest';
import { readWholeArchive } from '../../src/core/upstream/archive.js';
import { DEFAULT_LIST_PAGING } from '../../src/core/upstream/assumptions.js';
import type { PagePosition } from '../../src/core/upstream/archive.js';
import type { UpstreamIssue } from '../../src/core/upstream/schemas.js';
import { createLogCapture, jsonResponse, TEST_BASE_URL, type FetchHandler } from '../helpers.js';
import { errorBody, failureOf, setupClient, upstreamIssue } from './fixtures.js';

const pageParams = (calls: { url: URL }[]) => calls.map((call) => Object.fromEntries(call.url.searchParams.entries()));

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

  it('asks once more after a full last page and stops at the empty page (400 issues: 3 calls and one read ahead)', async () => {
    const { client, calls } = setupClient(pagedArchive(400));
    expect(await client.listAllPublicIssues(5000)).toHaveLength(400);
    // Two full pages of new rows prove paging: the next two pages are asked at once.
    expect(pageParams(calls).map((params) => params.offset)).toEqual(['0', '200', '400', '600']);
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

describe('what the archive read says when paging does not work as configured', () => {
  /** An upstream of `size` issues that answers `rows` rows a page whatever is asked, by offset. */
  function fixedPages(size: number, rows: number): FetchHandler {
    const archive = Array.from({ length: size }, (_, index) => upstreamIssue(index + 1));
    return (call) => {
      const offset = Number(call.url.searchParams.get('offset'));
      return jsonResponse({ ok: true, data: archive.slice(offset, offset + rows) });
    };
  }

  it('says nothing when every page but the last is full', async () => {
    const logs = createLogCapture();
    const { client } = setupClient(fixedPages(230, 200), { log: logs.log });
    await client.listAllPublicIssues(5000);
    expect(logs.lines).toEqual([]);
  });

  it('reads the whole archive from pages of 50 and logs one warn line: the row count never matched, and what to set', async () => {
    const logs = createLogCapture();
    const { client, calls } = setupClient(fixedPages(230, 50), { log: logs.log });
    expect(await client.listAllPublicIssues(5000)).toHaveLength(230);
    expect(calls).toHaveLength(6);
    expect(logs.entries()).toEqual([
      expect.objectContaining({
        level: 'warn',
        event: 'upstream_paging',
        problems: 'row_count_mismatch',
        seen: 'List Issues answered pages of 50 rows where 200 were asked with limit=200',
        set: 'UPSTREAM_LIST_LIMIT_PARAM to the name of its row-limit parameter, or UPSTREAM_LIST_PAGE_SIZE=50 if it caps pages',
        calls: 6,
        issues: 230,
      }),
    ]);
  });

  it('reports a page that repeats the first, naming UPSTREAM_LIST_PAGING', async () => {
    const { client } = setupClient((call, index) => pagedOnce(call, index));
    const read = await client.readArchive(5000);
    expect(read.findings.map((finding) => finding.problem)).toEqual(['repeated_page']);
    expect(read.findings[0]?.set).toContain('UPSTREAM_LIST_PAGING');
  });

  it('stops at the page cap and says so when pages keep coming, one row at a time', async () => {
    const { client, calls } = setupClient(fixedPages(100_000, 1));
    const read = await client.readArchive(200);
    expect(calls).toHaveLength(5);
    expect(read.findings.map((finding) => finding.problem)).toEqual(['row_count_mismatch', 'page_cap']);
  });

  it('says when ARCHIVE_MAX_ISSUES cut the archive short', async () => {
    const { client } = setupClient(fixedPages(1000, 200));
    const read = await client.readArchive(300);
    expect(read.findings).toEqual([expect.objectContaining({ problem: 'max_issues', set: 'ARCHIVE_MAX_ISSUES higher' })]);
  });

  it('asks by 1-based page number under the configured names when paging is by page', async () => {
    const paging = { limitParam: 'per_page', style: 'page', pagingParam: 'p', pageSize: 2 } as const;
    const archive = Array.from({ length: 3 }, (_, index) => upstreamIssue(index + 1));
    const { client, calls } = setupClient(
      (call) => {
        const page = Number(call.url.searchParams.get('p'));
        return jsonResponse({ ok: true, data: archive.slice((page - 1) * 2, page * 2) });
      },
      { paging },
    );
    expect(await client.listAllPublicIssues(5000)).toHaveLength(3);
    expect(pageParams(calls)).toEqual([
      { status: 'sent', isPublic: 'true', per_page: '2', p: '1' },
      { status: 'sent', isPublic: 'true', per_page: '2', p: '2' },
      { status: 'sent', isPublic: 'true', per_page: '2', p: '3' },
    ]);
  });
});

/** The same page whatever is asked: an upstream that ignores the paging parameter. */
const pagedOnce: FetchHandler = () => jsonResponse({ ok: true, data: [upstreamIssue(1), upstreamIssue(2)] });
