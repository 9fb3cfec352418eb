import type { UpstreamIssue } from './schemas.js';
import { ResponseTooLarge, type Validators } from './transport.js';

/**
 * How List Issues pages (docs/upstream.md "Assumptions": none of it is shown). The defaults are
 * the guesses in assumptions.ts; each can be set by configuration when an upstream differs.
 */
export interface ListPaging {
  /** Name of the row-limit parameter. */
  limitParam: string;
  /** `offset`: the parameter counts rows to skip; `page`: it is a 1-based page number. */
  style: 'offset' | 'page';
  /** Name of the offset or page-number parameter. */
  pagingParam: string;
  /** Rows asked per page. */
  pageSize: number;
}

/** Where one page starts: `offset` rows in, or page number `page` (1-based). */
export interface PagePosition {
  limit: number;
  offset: number;
  page: number;
  /** Validators of this page's last answer: a 304 means it has not changed. */
  conditional?: Validators | undefined;
}

/** One List Issues answer, read row by row: the rows that parsed, and those that did not. */
export interface ListedPage {
  rows: UpstreamIssue[];
  /** Ids of the malformed rows, `undefined` for a row without a readable id. */
  droppedIds: (string | undefined)[];
  /** The page answered 304 to `conditional`: it is as it was (no rows are given). */
  notModified?: boolean;
  /** The page's validators, when the upstream sent any. */
  validators?: Validators | undefined;
  /** The body's size in bytes, when known: how many such pages may be read at once. */
  bytes?: number | undefined;
}

export type ListPage = (position: PagePosition) => Promise<ListedPage>;

/** A sign that paging did not work as configured, with what an operator should set. */
export interface PagingFinding {
  problem: 'repeated_page' | 'row_count_mismatch' | 'page_cap' | 'max_issues';
  seen: string;
  set: string;
}

/** What reading the archive found: the rows kept, and what it saw on the way (for logs and `check`). */
export interface ArchiveRead<K = UpstreamIssue> {
  issues: K[];
  /** Rows received per call, in order (an empty last page included). */
  pageRows: number[];
  dropped: { count: number; ids: string[] };
  findings: PagingFinding[];
  /** The order every row came in, newest first by sending or by creation; `undefined` for neither (checked on each read, never assumed). */
  order: ListOrder | undefined;
  /** Rows per page that fit the body cap: the page size asked, or less (remember it for the next read). */
  pageSize: number;
}

/** How one read goes about it besides the paging rules. */
export interface ArchiveReadOptions<K> {
  /**
   * What is kept of each row, called as each page arrives: a page's raw rows are let go once
   * read, so memory is bounded by what this keeps, not by the bytes read.
   */
  reduceRow: (row: UpstreamIssue) => K;
  /** Rows per page to ask: a smaller size learnt before (a page over the body cap); the configured one by default. */
  pageSize?: number | undefined;
  /** Rows the last full read found, when there was one: how far ahead pages may be read at once. */
  expectedRows?: number | undefined;
}

/**
 * Pages as small as a quarter of what we ask (a plausible default of 50 against our 200) still
 * read a whole archive of ARCHIVE_MAX_ISSUES; smaller pages hit the page cap, which is reported.
 */
const SMALLEST_PAGE_FRACTION = 4;

/**
 * List Issues calls in flight at once once paging is proven: enough that a cold read of
 * thousands of rows is bound by transfer rather than by latency x pages, few enough to stay a
 * polite client (each page may be up to the body cap).
 */
export const CONCURRENT_PAGES = 4;
/**
 * Bytes of pages in flight at once, at most (judged by the last page's size): parsing a page
 * holds several times its size at once (docs/upstream.md "How the archive is read and kept
 * fresh" has the measurement), so two pages of TARGET_PAGE_BYTES, not four near the cap.
 */
export const CONCURRENT_PAGE_BYTES = 8 * 1024 * 1024;
/**
 * A page larger than this is followed by smaller ones (by the same divisions as above): what
 * parsing one page makes is held at once, so many small pages in flight cost less memory than
 * one near the cap, and take no longer once they are read a few at a time.
 */
export const TARGET_PAGE_BYTES = 4 * 1024 * 1024;

/** The next smaller page size: the current one divided by its smallest factor, so offsets and page numbers stay aligned. */
export function smallerPageSize(limit: number): number | undefined {
  for (let divisor = 2; divisor <= limit; divisor += 1) if (limit % divisor === 0) return limit / divisor;
  return undefined;
}

/** The page size whose pages would weigh about TARGET_PAGE_BYTES, judged by one of `limit` rows weighing `bytes`. */
function lighterPageSize(limit: number, bytes: number): number {
  let size = limit;
  // Bounded: each turn divides `size` by at least 2.
  for (
    let smaller = smallerPageSize(size);
    smaller !== undefined && (size * bytes) / limit > TARGET_PAGE_BYTES;
    smaller = smallerPageSize(size)
  ) {
    size = smaller;
  }
  return size;
}

/**
 * Pages over the body cap asked again with fewer rows, one after another, before the read gives
 * up: rows of up to an eighth of the cap each still fit a page. A smaller page whose declared
 * length did not shrink gives up at once: its rows are not what makes it large.
 */
const MAX_SHRINKS = 3;

/** How an upstream lists, as a whole read found it: newest `sentAt` first, or newest `createdAt` first. */
export type ListOrder = 'sent' | 'created';

/**
 * Watches the order rows arrive in: newest `sentAt` first, and newest `createdAt` first. A sent
 * row without a readable date breaks the order of that date: nothing is assumed of a row that
 * cannot show it. Most publications draft and send in order, so both hold at once; an old draft
 * sent today breaks one of them.
 */
function createOrderWatch() {
  let lastSent = Number.POSITIVE_INFINITY;
  let lastCreated = Number.POSITIVE_INFINITY;
  let bySent = true;
  let byCreated = true;
  return {
    see(row: UpstreamIssue): void {
      if (row.status !== 'sent') return;
      const sent = Date.parse(row.sentAt ?? '');
      if (!(sent <= lastSent)) bySent = false;
      else lastSent = sent;
      const created = Date.parse(row.createdAt ?? '');
      if (!(created <= lastCreated)) byCreated = false;
      else lastCreated = created;
    },
    /** The order every row so far came in (by sending when both hold), or `undefined` for neither: newest first by no date. */
    order: (): ListOrder | undefined => (bySent ? 'sent' : byCreated ? 'created' : undefined),
    /** Whether every row so far kept `order`. */
    holds: (order: ListOrder): boolean => (order === 'sent' ? bySent : byCreated),
  };
}

/**
 * Reads the whole archive, trusting none of the paging guesses: a short page is not taken as
 * the end (an ignored or capped limit answers short pages too), so pages are read until one
 * comes back empty or adds no id not seen before, within `maxIssues` and a page cap. Offsets
 * advance by the rows received, so a capped page loses nothing. What suggests paging is not
 * working is returned as findings rather than trusted. A page over the body cap is asked again
 * with fewer rows. Once two full pages of new rows have proven that paging works, the next
 * pages are read a few at a time.
 */
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
  const dropped: string[] = [];
  let droppedCount = 0;
  const pageRows: number[] = [];
  const asked: number[] = [];
  const order = createOrderWatch();
  let offset = 0;
  let page = 1;
  let repeated = false;
  let ended = false;
  /** Full pages of only new rows in a row at this size: two prove paging works. */
  let cleanPages = 0;
  let calls = 0;
  let lastPageBytes = 0;
  /** Pages over the cap in a row, and the declared length of the last one. */
  let shrinks = 0;
  let lastDeclared = Number.POSITIVE_INFINITY;

  /** Takes one page's rows in; true when it was a full page of new rows. */
  function take(listed: ListedPage, pageLimit: number): { received: number; added: number; identified: number } {
    const { rows, droppedIds } = listed;
    const received = rows.length + droppedIds.length;
    pageRows.push(received);
    asked.push(pageLimit);
    // Only an id tells a new row from a repeated one: a malformed row without one adds nothing.
    let added = 0;
    let identified = 0;
    for (const id of droppedIds) {
      if (id === undefined) {
        droppedCount += 1;
        continue;
      }
      identified += 1;
      if (seen.has(id)) continue;
      seen.add(id);
      dropped.push(id);
      droppedCount += 1;
      added += 1;
    }
    for (const row of rows) {
      identified += 1;
      if (seen.has(row.id) || kept.length >= maxIssues) continue;
      seen.add(row.id);
      order.see(row);
      kept.push(reduceRow(row));
      added += 1;
    }
    return { received, added, identified };
  }

  /** How many pages may be asked at once from here. */
  function windowSize(): number {
    if (cleanPages < 2) return 1;
    const most = Math.max(1, Math.min(CONCURRENT_PAGES, Math.floor(CONCURRENT_PAGE_BYTES / Math.max(1, lastPageBytes))));
    const expected = options?.expectedRows;
    // Without a count from an earlier read, the window grows as pages keep coming full.
    if (expected === undefined) return Math.min(most, 2 ** (cleanPages - 1));
    return Math.min(most, Math.max(1, Math.ceil((expected - offset) / limit) + 1));
  }

  // Bounded: every turn makes at least one call, and `calls` stops at maxPages.
  while (calls < maxPages && kept.length < maxIssues && !ended) {
    const size = Math.min(windowSize(), maxPages - calls);
    const window: { position: PagePosition; answer: Promise<ListedPage> }[] = [];
    for (let k = 0; k < size; k += 1) {
      const position = { limit, offset: offset + k * limit, page: page + k };
      const answer = listPage(position);
      // Pages read ahead may go unused (an earlier one ended the archive): never an unhandled rejection.
      answer.catch(() => undefined);
      window.push({ position, answer });
    }
    calls += size;
    for (const [index, { answer }] of window.entries()) {
      let listed: ListedPage;
      try {
        listed = await answer;
      } catch (error) {
        if (!(error instanceof ResponseTooLarge)) throw error;
        const declared = error.declaredBytes ?? Number.POSITIVE_INFINITY;
        // Straight to pages of about TARGET_PAGE_BYTES when the length was declared: a page
        // halved but still near the cap would be read whole, and reading it is the peak of the
        // memory of a load (docs/upstream.md "Pages of a few MiB").
        const halved = smallerPageSize(limit);
        const lighter = Number.isFinite(declared) ? lighterPageSize(limit, declared) : limit;
        const smaller =
          shrinks < MAX_SHRINKS && !(declared >= lastDeclared && declared !== Number.POSITIVE_INFINITY) && halved !== undefined
            ? Math.min(halved, lighter)
            : undefined;
        if (smaller === undefined) throw error;
        shrinks += 1;
        lastDeclared = declared;
        // Asked again from here with fewer rows; a page number counts pages of the new size.
        limit = smaller;
        page = Math.floor(offset / limit) + 1;
        cleanPages = 0;
        break;
      }
      shrinks = 0;
      lastDeclared = Number.POSITIVE_INFINITY;
      lastPageBytes = listed.bytes ?? 0;
      const { received, added, identified } = take(listed, limit);
      if (received === 0 || added === 0) {
        repeated = pageRows.length > 1 && identified > 0 && added === 0;
        ended = true;
        break;
      }
      offset += received;
      page += 1;
      cleanPages = received === limit && added === received ? cleanPages + 1 : 0;
      const lighter = lighterPageSize(limit, lastPageBytes);
      if (lighter < limit) {
        // The next pages are smaller; those read ahead at the old size are let go.
        limit = lighter;
        page = Math.floor(offset / limit) + 1;
        if (index < window.length - 1) break;
      }
      // An odd page ends the window: the pages read ahead assumed it would be full.
      if ((cleanPages === 0 || kept.length >= maxIssues) && index < window.length - 1) break;
    }
  }
  const findings = judgePaging(paging, pageRows, asked, { repeated, ended, full: kept.length >= maxIssues, maxIssues });
  return {
    issues: kept,
    pageRows,
    dropped: { count: droppedCount, ids: dropped },
    findings,
    order: order.order(),
    pageSize: limit,
  };
}

/** What a refresh read at the head of an archive found. */
export interface HeadRead<K> {
  /** The first page answered 304: nothing changed at the head. */
  unchanged: boolean;
  /** The rows read, reduced, in the order received. */
  issues: K[];
  /** The ids of those rows, in the order received. */
  ids: string[];
  /** A row already known was met: the head can be placed in the listing (see `placeHead`). */
  anchored: boolean;
  /** The rows kept the order the last whole read found. */
  inOrder: boolean;
  /** The first page's validators, for the next refresh. */
  validators?: Validators | undefined;
  pageRows: number[];
  dropped: { count: number; ids: string[] };
}

/**
 * Rows per head page: a refresh with nothing new reads this many rows (or none, after a 304).
 * Small, because a row may carry a whole letter: ten rows of a fat archive are 1.5 MB.
 */
export const HEAD_PAGE_ROWS = 10;
/** Head pages read at most, while none holds a known row, before a refresh gives up and reads the whole archive. */
export const HEAD_MAX_PAGES = 5;

/**
 * Reads the newest rows of an archive the last whole read found listed newest first (by sending
 * or by creation: `order`), a small page at a time, until a page holds a row it already knows.
 * Sends the first page's validators, and a 304 means nothing changed there. Says when no known
 * row came within a few pages, or when the rows broke the order: the caller then reads the
 * whole archive.
 */
export async function readArchiveHead<K>(
  listPage: ListPage,
  options: {
    isKnownId: (id: string) => boolean;
    reduceRow: (row: UpstreamIssue) => K;
    validators?: Validators | undefined;
    pageSize: number;
    order: ListOrder;
  },
): Promise<HeadRead<K>> {
  const limit = Math.min(HEAD_PAGE_ROWS, options.pageSize);
  const issues: K[] = [];
  const ids: string[] = [];
  const pageRows: number[] = [];
  const dropped: string[] = [];
  let droppedCount = 0;
  const watch = createOrderWatch();
  let validators: Validators | undefined;
  let anchored = false;
  let offset = 0;
  for (let page = 1; page <= HEAD_MAX_PAGES; page += 1) {
    const listed = await listPage({ limit, offset, page, conditional: page === 1 ? options.validators : undefined });
    if (listed.notModified) {
      return {
        unchanged: true,
        issues,
        ids,
        anchored: true,
        inOrder: true,
        validators: options.validators,
        pageRows,
        dropped: { count: 0, ids: [] },
      };
    }
    if (page === 1) validators = listed.validators;
    const received = listed.rows.length + listed.droppedIds.length;
    pageRows.push(received);
    for (const id of listed.droppedIds) {
      droppedCount += 1;
      if (id !== undefined) dropped.push(id);
    }
    for (const row of listed.rows) {
      watch.see(row);
      issues.push(options.reduceRow(row));
      ids.push(row.id);
      if (options.isKnownId(row.id)) anchored = true;
    }
    // A short page is the end of the list (or a capped page): nothing more to meet below it.
    if (anchored || !watch.holds(options.order) || received < limit) break;
    offset += received;
  }
  return {
    unchanged: false,
    issues,
    ids,
    anchored,
    inOrder: watch.holds(options.order),
    validators,
    pageRows,
    dropped: { count: droppedCount, ids: dropped },
  };
}

/**
 * Where a head read sits in the listing an index was made from (`listing`: every id, in the
 * order listed). The head replaces the listing down to its deepest known row: rows above that
 * row which the head no longer holds have left the list (unpublished, or no longer public), and
 * rows below it are as they were. `present` are ids the head held but could not read (dropped
 * rows): never taken as gone. `undefined` when the head holds no known row, or its known rows
 * came in another order than before (the upstream's order changed: only a whole read can tell).
 */
export function placeHead(
  listing: readonly string[],
  head: readonly string[],
  present: readonly string[] = [],
): { listing: string[]; gone: string[] } | undefined {
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

function judgePaging(
  paging: ListPaging,
  pageRows: readonly number[],
  askedRows: readonly number[],
  end: { repeated: boolean; ended: boolean; full: boolean; maxIssues: number },
): PagingFinding[] {
  const findings: PagingFinding[] = [];
  const asked = askedRows.at(-1) ?? paging.pageSize;
  const param = `${paging.pagingParam} (read as ${paging.style === 'page' ? 'a page number' : 'an offset'})`;
  // Every non-empty page but the last should be full; a longer page is never right.
  let lastFilled = pageRows.length - 1;
  while (lastFilled >= 0 && (pageRows[lastFilled] === 0 || (end.repeated && lastFilled === pageRows.length - 1))) lastFilled -= 1;
  const odd = pageRows.find((rows, index) => {
    const pageAsked = askedRows[index] ?? asked;
    return rows > pageAsked || (rows > 0 && rows !== pageAsked && index < lastFilled);
  });
  if (odd !== undefined) {
    findings.push({
      problem: 'row_count_mismatch',
      seen: `List Issues answered pages of ${odd} rows where ${asked} were asked with ${paging.limitParam}=${asked}`,
      set: `UPSTREAM_LIST_LIMIT_PARAM to the name of its row-limit parameter, or UPSTREAM_LIST_PAGE_SIZE=${Math.min(odd, asked)} if it caps pages`,
    });
  }
  if (end.repeated) {
    findings.push({
      problem: 'repeated_page',
      seen: `page ${pageRows.length} of List Issues repeated the rows already read: the upstream ignores ${param}`,
      set: 'UPSTREAM_LIST_PAGING (offset or page) and UPSTREAM_LIST_PAGING_PARAM to how it pages',
    });
  }
  if (end.full) {
    findings.push({
      problem: 'max_issues',
      seen: `the archive reached ARCHIVE_MAX_ISSUES=${end.maxIssues}; later issues are not served`,
      set: 'ARCHIVE_MAX_ISSUES higher',
    });
  } else if (!end.ended) {
    findings.push({
      problem: 'page_cap',
      seen: `List Issues was still answering after ${pageRows.length} pages (pages of ${pageRows.at(-1) ?? 0} rows)`,
      set: 'UPSTREAM_LIST_LIMIT_PARAM or UPSTREAM_LIST_PAGE_SIZE so pages come back full',
    });
  }
  return findings;
}
