import { describe, it, expect } from 'vitest';
import { placeHead, readArchiveHead, readWholeArchive, type ListPage } from '../../src/core/upstream/archive.js';
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
    expect(calls.map((call) => call.url.href)).toEqual([`${TEST_BASE_URL}/newsletter/issues?status=sent&isPublic=true&limit=200&offset=0`]);
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
    const { client, calls } = setupClient((call, index) =>
      index === 1 ? jsonResponse(errorBody('UNAUTHORIZED'), 401) : archive(call, index),
    );
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

  it('counts a dropped row once when a repeated page brings it again, and a dropped row without an id each time', async () => {
    const row = (n: number) => ({ id: `iss_${n}`, subject: `Issue ${n}`, status: 'sent' }) as UpstreamIssue;
    const pages = [
      { rows: Array.from({ length: 199 }, (_, i) => row(i)), droppedIds: ['broken_1'] },
      { rows: [row(199), row(200)], droppedIds: ['broken_1', 'broken_2', undefined, 'broken_2'] },
    ];
    let call = 0;
    const read = await readWholeArchive(async () => pages[call++] ?? { rows: [], droppedIds: [] }, DEFAULT_LIST_PAGING, 5000);
    expect(read.issues).toHaveLength(201);
    expect(read.dropped).toEqual({ count: 3, ids: ['broken_1', 'broken_2'] });
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

/** A List Issues of `rows` (in the order given), paged by limit and offset, read row by row. */
function listOf(rows: UpstreamIssue[]): ListPage & { asked: number[] } {
  const asked: number[] = [];
  const listPage = async ({ limit, offset }: PagePosition) => {
    asked.push(offset);
    return { rows: rows.slice(offset, offset + limit), droppedIds: [] };
  };
  return Object.assign(listPage, { asked });
}

/** A sent row `id`, sent and created on the given days of January 2026 (day 0: no readable date). */
function row(id: string, sentDay: number, createdDay: number): UpstreamIssue {
  const day = (n: number) => (n === 0 ? null : new Date(Date.UTC(2026, 0, n, 9)).toISOString());
  return { id, slug: id, subject: id, status: 'sent', isPublic: true, sentAt: day(sentDay), createdAt: day(createdDay) };
}

describe('the order a whole read finds', () => {
  const orderOf = async (rows: UpstreamIssue[]) => (await readWholeArchive(listOf(rows), DEFAULT_LIST_PAGING, 5000)).order;

  it('finds newest sentAt first when creation and sending agree, as for letters drafted the day before they are sent', async () => {
    expect(await orderOf([row('c', 9, 8), row('b', 7, 6), row('a', 5, 4)])).toBe('sent');
  });

  it('finds newest sentAt first when an old draft sent today breaks the order of creation', async () => {
    expect(await orderOf([row('old-draft', 9, 1), row('b', 7, 6), row('a', 5, 4)])).toBe('sent');
  });

  it('finds newest createdAt first when an old draft sent today lands deep', async () => {
    expect(await orderOf([row('b', 7, 6), row('a', 5, 4), row('old-draft', 9, 1)])).toBe('created');
  });

  it('finds no order for oldest first, or for rows without the dates that would show one', async () => {
    expect(await orderOf([row('a', 5, 4), row('b', 7, 6), row('c', 9, 8)])).toBeUndefined();
    expect(await orderOf([row('b', 7, 0), row('a', 5, 0), row('late', 9, 0)])).toBeUndefined();
  });
});

describe('reading the head of the archive', () => {
  const known =
    (...ids: string[]) =>
    (id: string) =>
      ids.includes(id);
  const keep = (issue: UpstreamIssue) => issue.id;

  it('reads one page of 10 rows when it holds a known row', async () => {
    const rows = Array.from({ length: 30 }, (_, index) => row(`r${30 - index}`, 31 - index, 30 - index));
    const list = listOf(rows);
    const head = await readArchiveHead(list, { isKnownId: known('r25'), reduceRow: keep, pageSize: 200, order: 'sent' });
    expect(list.asked).toEqual([0]);
    expect(head).toMatchObject({ unchanged: false, anchored: true, inOrder: true, pageRows: [10] });
    expect(head.ids).toHaveLength(10);
  });

  it('reads on while pages hold only new rows, at most five, and says when none held a known row', async () => {
    // 80 rows sent a minute apart, newest first, none of them known.
    const list = listOf(
      Array.from({ length: 80 }, (_, index) => ({
        ...row(`r${index}`, 31, 1),
        sentAt: new Date(Date.UTC(2026, 0, 31) - index * 60_000).toISOString(),
      })),
    );
    const head = await readArchiveHead(list, { isKnownId: known(), reduceRow: keep, pageSize: 200, order: 'sent' });
    expect(list.asked).toEqual([0, 10, 20, 30, 40]);
    expect(head.anchored).toBe(false);
  });

  it('stops and says so when the head breaks the order the whole read found', async () => {
    const list = listOf([row('b', 7, 6), row('a', 5, 4), row('new', 9, 8)]);
    const head = await readArchiveHead(list, { isKnownId: known('a'), reduceRow: keep, pageSize: 200, order: 'sent' });
    expect(head.inOrder).toBe(false);
  });
});

describe('placing a head read in the listing', () => {
  const listing = ['e', 'd', 'c', 'b', 'a'];

  it('puts new rows on top and keeps the rows below the deepest known one as they were', () => {
    expect(placeHead(listing, ['g', 'f', 'e', 'd'])).toEqual({ listing: ['g', 'f', 'e', 'd', 'c', 'b', 'a'], gone: [] });
  });

  it('takes a row above the deepest known one that the head no longer holds as gone', () => {
    expect(placeHead(listing, ['f', 'e', 'c'])).toEqual({ listing: ['f', 'e', 'c', 'b', 'a'], gone: ['d'] });
  });

  it('never takes a row the head held but could not read as gone', () => {
    expect(placeHead(listing, ['e', 'c'], ['d'])).toEqual({ listing: ['e', 'c', 'd', 'b', 'a'], gone: [] });
  });

  it('cannot place a head without a known row, or whose known rows changed their order', () => {
    expect(placeHead(listing, ['x', 'y'])).toBeUndefined();
    expect(placeHead(listing, ['d', 'e'])).toBeUndefined();
  });
});
