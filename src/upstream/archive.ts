import type { UpstreamIssue } from './schemas.js';

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
}

/** One List Issues answer, read row by row: the rows that parsed, and those that did not. */
export interface ListedPage {
  rows: UpstreamIssue[];
  /** Ids of the malformed rows, `undefined` for a row without a readable id. */
  droppedIds: (string | undefined)[];
}

/** A sign that paging did not work as configured, with what an operator should set. */
export interface PagingFinding {
  problem: 'repeated_page' | 'row_count_mismatch' | 'page_cap' | 'max_issues';
  seen: string;
  set: string;
}

/** What reading the archive found: the issues, and what it saw on the way (for logs and `check`). */
export interface ArchiveRead {
  issues: UpstreamIssue[];
  /** Rows received per call, in order (an empty last page included). */
  pageRows: number[];
  dropped: { count: number; ids: string[] };
  findings: PagingFinding[];
}

/**
 * Pages as small as a quarter of what we ask (a plausible default of 50 against our 200) still
 * read a whole archive of ARCHIVE_MAX_ISSUES; smaller pages hit the page cap, which is reported.
 */
const SMALLEST_PAGE_FRACTION = 4;

/**
 * Reads the whole archive, trusting none of the paging guesses: a short page is not taken as
 * the end (an ignored or capped limit answers short pages too), so pages are read until one
 * comes back empty or adds no id not seen before, within `maxIssues` and a page cap. Offsets
 * advance by the rows received, so a capped page loses nothing. What suggests paging is not
 * working is returned as findings rather than trusted.
 */
export async function readWholeArchive(
  listPage: (position: PagePosition) => Promise<ListedPage>,
  paging: ListPaging,
  maxIssues: number,
): Promise<ArchiveRead> {
  const limit = paging.pageSize;
  const maxPages = Math.ceil((maxIssues * SMALLEST_PAGE_FRACTION) / limit) + 1;
  const byId = new Map<string, UpstreamIssue>();
  const seen = new Set<string>();
  const dropped: string[] = [];
  let droppedCount = 0;
  const pageRows: number[] = [];
  let offset = 0;
  let repeated = false;
  let ended = false;
  for (let page = 0; page < maxPages && byId.size < maxIssues; page += 1) {
    const { rows, droppedIds } = await listPage({ limit, offset, page: page + 1 });
    const received = rows.length + droppedIds.length;
    pageRows.push(received);
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
      if (seen.has(row.id) || byId.size >= maxIssues) continue;
      seen.add(row.id);
      byId.set(row.id, row);
      added += 1;
    }
    if (received === 0 || added === 0) {
      repeated = page > 0 && identified > 0 && added === 0;
      ended = true;
      break;
    }
    offset += received;
  }
  const findings = judgePaging(paging, pageRows, { repeated, ended, full: byId.size >= maxIssues, maxIssues });
  return { issues: [...byId.values()], pageRows, dropped: { count: droppedCount, ids: dropped }, findings };
}

function judgePaging(
  paging: ListPaging,
  pageRows: readonly number[],
  end: { repeated: boolean; ended: boolean; full: boolean; maxIssues: number },
): PagingFinding[] {
  const findings: PagingFinding[] = [];
  const asked = paging.pageSize;
  const param = `${paging.pagingParam} (read as ${paging.style === 'page' ? 'a page number' : 'an offset'})`;
  // Every non-empty page but the last should be full; a longer page is never right.
  let lastFilled = pageRows.length - 1;
  while (lastFilled >= 0 && (pageRows[lastFilled] === 0 || (end.repeated && lastFilled === pageRows.length - 1))) lastFilled -= 1;
  const odd = pageRows.find((rows, index) => rows > asked || (rows > 0 && rows !== asked && index < lastFilled));
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
