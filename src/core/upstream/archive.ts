import type { ListPaging } from './assumptions.js';
import type { readRows, UpstreamIssue } from './schemas.js';
import { ResponseTooLarge, type Validators } from './transport.js';

export type PagePosition = { limit: number; offset: number; page: number; conditional?: Validators | undefined };

export type ListedPage = ReturnType<typeof readRows<UpstreamIssue>> & { notModified?: boolean; validators?: Validators; bytes?: number };

export type ListPage = (position: PagePosition) => Promise<ListedPage>;

export type ListOrder = 'sent' | 'created';

export interface ArchiveRead<K = UpstreamIssue> {
  issues: K[];
  pageRows: number[];
  dropped: { count: number; ids: string[] };
  findings: { problem: 'repeated_page' | 'row_count_mismatch' | 'page_cap' | 'max_issues'; seen: string; set: string }[];
  order: ListOrder | undefined;
  pageSize: number;
}

/** `reduceRow` is applied as each page arrives: memory is bounded by what it keeps, not by the bytes read. */
export type ArchiveReadOptions<K> = { reduceRow: (row: UpstreamIssue) => K; pageSize?: number; expectedRows?: number };

const SMALLEST_PAGE_FRACTION = 4;
const CONCURRENT_PAGES = 4;
const CONCURRENT_PAGE_BYTES = 8 * 1024 * 1024;
const TARGET_PAGE_BYTES = 4 * 1024 * 1024;
const MAX_SHRINKS = 3;

/** Divided by its smallest factor, so offsets and page numbers stay aligned. */
function smallerPageSize(limit: number): number | undefined {
  for (let divisor = 2; divisor <= limit; divisor += 1) if (limit % divisor === 0) return limit / divisor;
  return undefined;
}

function lighterPageSize(limit: number, bytes: number, size = limit): number {
  const smaller = smallerPageSize(size);
  return smaller !== undefined && (size * bytes) / limit > TARGET_PAGE_BYTES ? lighterPageSize(limit, bytes, smaller) : size;
}

/** The last time each order saw, NaN once broken; a row without a readable date breaks that date's order. */
function createOrderWatch() {
  const last = { sent: Number.POSITIVE_INFINITY, created: Number.POSITIVE_INFINITY };
  const holds = (order: ListOrder): boolean => !Number.isNaN(last[order]);
  return {
    see(row: UpstreamIssue): void {
      if (row.status !== 'sent') return;
      for (const order of ['sent', 'created'] as const) {
        const time = Date.parse((order === 'sent' ? row.sentAt : row.createdAt) ?? '');
        last[order] = time <= last[order] ? time : Number.NaN;
      }
    },
    order: (): ListOrder | undefined => (holds('sent') ? 'sent' : holds('created') ? 'created' : undefined),
    holds,
  };
}

/** Trusts none of the paging guesses (docs/upstream.md "Assumptions"): reads until a page is empty or adds no new id. */
export async function readWholeArchive<K = UpstreamIssue>(
  listPage: ListPage,
  paging: ListPaging,
  maxIssues: number,
  options?: ArchiveReadOptions<K>,
): Promise<ArchiveRead<K>> {
  const reduceRow = options?.reduceRow ?? ((row: UpstreamIssue) => row as K);
  let limit = Math.min(paging.pageSize, options?.pageSize ?? paging.pageSize);
  const maxPages = Math.ceil((maxIssues * SMALLEST_PAGE_FRACTION) / paging.pageSize) + 1;
  const kept: K[] = [];
  const seen = new Set<string>();
  const dropped = { count: 0, ids: [] as string[] };
  const pageRows: number[] = [];
  const asked: number[] = [];
  const order = createOrderWatch();
  let offset = 0;
  let page = 1;
  let repeated = false;
  let ended = false;
  // Full pages of only new rows in a row at this size: two prove paging works.
  let cleanPages = 0;
  let calls = 0;
  let lastPageBytes = 0;
  let shrinks = 0;
  let lastDeclared = Number.POSITIVE_INFINITY;

  function take({ rows, droppedIds }: ListedPage) {
    const received = rows.length + droppedIds.length;
    const identified = rows.length + droppedIds.filter((id) => id !== undefined).length;
    pageRows.push(received);
    asked.push(limit);
    let added = 0;
    // A dropped row already met (a repeated page) is counted once; one without an id every time.
    for (const id of droppedIds) {
      if (id !== undefined && seen.has(id)) continue;
      dropped.count += 1;
      if (id === undefined) continue;
      seen.add(id);
      dropped.ids.push(id);
      added += 1;
    }
    for (const row of rows) {
      if (seen.has(row.id) || kept.length >= maxIssues) continue;
      seen.add(row.id);
      order.see(row);
      kept.push(reduceRow(row));
      added += 1;
    }
    return { received, added, identified };
  }

  function windowSize(): number {
    if (cleanPages < 2) return 1;
    const most = Math.max(1, Math.min(CONCURRENT_PAGES, Math.floor(CONCURRENT_PAGE_BYTES / Math.max(1, lastPageBytes))));
    const expected = options?.expectedRows;
    return Math.min(most, expected === undefined ? 2 ** (cleanPages - 1) : Math.max(1, Math.ceil((expected - offset) / limit) + 1));
  }

  while (calls < maxPages && kept.length < maxIssues && !ended) {
    const window = Array.from({ length: Math.min(windowSize(), maxPages - calls) }, (_, k) => {
      const answer = listPage({ limit, offset: offset + k * limit, page: page + k });
      // Pages read ahead may go unused: never an unhandled rejection.
      answer.catch(() => undefined);
      return answer;
    });
    calls += window.length;
    for (const answer of window) {
      let listed: ListedPage;
      try {
        listed = await answer;
      } catch (error) {
        if (!(error instanceof ResponseTooLarge)) throw error;
        const declared = error.declaredBytes ?? Number.POSITIVE_INFINITY;
        // A smaller page whose declared length did not shrink gives up: its rows are not what makes it large.
        const halved = smallerPageSize(limit);
        if (shrinks >= MAX_SHRINKS || (Number.isFinite(declared) && declared >= lastDeclared) || halved === undefined) throw error;
        shrinks += 1;
        lastDeclared = declared;
        limit = Math.min(halved, Number.isFinite(declared) ? lighterPageSize(limit, declared) : limit);
        page = Math.floor(offset / limit) + 1;
        cleanPages = 0;
        break;
      }
      shrinks = 0;
      lastDeclared = Number.POSITIVE_INFINITY;
      lastPageBytes = listed.bytes ?? 0;
      const { received, added, identified } = take(listed);
      if (received === 0 || added === 0) {
        repeated = pageRows.length > 1 && identified > 0 && added === 0;
        ended = true;
        break;
      }
      offset += received;
      page += 1;
      cleanPages = received === limit && added === received ? cleanPages + 1 : 0;
      const lighter = lighterPageSize(limit, lastPageBytes);
      // The pages read ahead at the old size are let go; so are those after an odd page, read ahead as if it were full.
      if (lighter < limit) {
        limit = lighter;
        page = Math.floor(offset / limit) + 1;
        break;
      }
      if (cleanPages === 0 || kept.length >= maxIssues) break;
    }
  }
  return { issues: kept, pageRows, dropped, findings: judgePaging(), order: order.order(), pageSize: limit };

  function judgePaging(): ArchiveRead['findings'] {
    const full = kept.length >= maxIssues;
    const lastAsked = asked.at(-1) ?? paging.pageSize;
    let lastFilled = pageRows.length - 1;
    while (lastFilled >= 0 && (pageRows[lastFilled] === 0 || (repeated && lastFilled === pageRows.length - 1))) lastFilled -= 1;
    const odd = pageRows.find((rows, index) => {
      const pageAsked = asked[index] ?? lastAsked;
      return rows > pageAsked || (rows > 0 && rows !== pageAsked && index < lastFilled);
    });
    const findings: (ArchiveRead['findings'][number] | false)[] = [
      odd !== undefined && {
        problem: 'row_count_mismatch',
        seen: `List Issues answered pages of ${odd} rows where ${lastAsked} were asked with ${paging.limitParam}=${lastAsked}`,
        set: `UPSTREAM_LIST_LIMIT_PARAM to the name of its row-limit parameter, or UPSTREAM_LIST_PAGE_SIZE=${Math.min(odd, lastAsked)} if it caps pages`,
      },
      repeated && {
        problem: 'repeated_page',
        seen: `page ${pageRows.length} of List Issues repeated the rows already read: the upstream ignores ${paging.pagingParam} (read as ${paging.style === 'page' ? 'a page number' : 'an offset'})`,
        set: 'UPSTREAM_LIST_PAGING (offset or page) and UPSTREAM_LIST_PAGING_PARAM to how it pages',
      },
      full && {
        problem: 'max_issues',
        seen: `the archive reached ARCHIVE_MAX_ISSUES=${maxIssues}; later issues are not served`,
        set: 'ARCHIVE_MAX_ISSUES higher',
      },
      !(full || ended) && {
        problem: 'page_cap',
        seen: `List Issues was still answering after ${pageRows.length} pages (pages of ${pageRows.at(-1) ?? 0} rows)`,
        set: 'UPSTREAM_LIST_LIMIT_PARAM or UPSTREAM_LIST_PAGE_SIZE so pages come back full',
      },
    ];
    return findings.filter((finding) => finding !== false);
  }
}

/** `unchanged`: the first page answered 304; `anchored`: a known row was met; `inOrder`: the last whole read's order held. */
export interface HeadRead<K> extends Pick<ArchiveRead<K>, 'issues' | 'pageRows' | 'dropped'> {
  unchanged: boolean;
  ids: string[];
  anchored: boolean;
  inOrder: boolean;
  validators?: Validators | undefined;
}

export interface HeadReadOptions<K> {
  isKnownId: (id: string) => boolean;
  reduceRow: (row: UpstreamIssue) => K;
  validators?: Validators | undefined;
  order: ListOrder;
}

// Small pages: a row may carry a whole letter.
const HEAD_PAGE_ROWS = 10;
const HEAD_MAX_PAGES = 5;

/** Reads the newest rows until a page holds a known row; when none came or the order broke, the caller reads the whole archive. */
export async function readArchiveHead<K>(listPage: ListPage, options: HeadReadOptions<K> & { pageSize: number }): Promise<HeadRead<K>> {
  const limit = Math.min(HEAD_PAGE_ROWS, options.pageSize);
  const read: HeadRead<K> = {
    unchanged: false,
    issues: [],
    ids: [],
    anchored: false,
    inOrder: true,
    pageRows: [],
    dropped: { count: 0, ids: [] },
  };
  const watch = createOrderWatch();
  for (let page = 1, offset = 0; page <= HEAD_MAX_PAGES; page += 1) {
    const listed = await listPage({ limit, offset, page, conditional: page === 1 ? options.validators : undefined });
    if (listed.notModified) return { ...read, unchanged: true, anchored: true, validators: options.validators };
    if (page === 1) read.validators = listed.validators;
    const received = listed.rows.length + listed.droppedIds.length;
    read.pageRows.push(received);
    read.dropped.count += listed.droppedIds.length;
    read.dropped.ids.push(...listed.droppedIds.filter((id) => id !== undefined));
    for (const row of listed.rows) {
      watch.see(row);
      read.issues.push(options.reduceRow(row));
      read.ids.push(row.id);
      read.anchored ||= options.isKnownId(row.id);
    }
    read.inOrder = watch.holds(options.order);
    if (read.anchored || !read.inOrder || received < limit) break;
    offset += received;
  }
  return read;
}

/** The head replaces the listing down to its deepest known row; `present` ids are never `gone`; `undefined`: it cannot be placed. */
export function placeHead(listing: readonly string[], head: readonly string[], present: readonly string[] = []) {
  const position = new Map<string, number>();
  for (const [index, id] of listing.entries()) if (!position.has(id)) position.set(id, index);
  let deepest = -1;
  for (const id of head) {
    const at = position.get(id);
    if (at === undefined) continue;
    if (at <= deepest) return undefined;
    deepest = at;
  }
  if (deepest < 0) return undefined;
  const inHead = new Set(head);
  const unread = [...new Set(present)].filter((id) => !inHead.has(id));
  const held = new Set([...inHead, ...unread]);
  const gone = listing.slice(0, deepest + 1).filter((id) => !held.has(id));
  const below = listing.slice(deepest + 1).filter((id) => !held.has(id));
  return { listing: [...head, ...unread, ...below], gone };
}
