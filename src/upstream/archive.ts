import { LIST_ISSUES_MAX_ROWS } from './assumptions.js';
import type { ListIssuesQuery, UpstreamIssue } from './schemas.js';

/**
 * Paging of List Issues is not documented, so we read page after page (offset += rows) while
 * pages come back full, and stop early when a page adds no id we have not seen (an upstream
 * that ignores the offset parameter then costs one extra call, not an endless loop).
 */
export async function readWholeArchive(
  listIssues: (query: ListIssuesQuery) => Promise<UpstreamIssue[]>,
  maxIssues: number,
): Promise<UpstreamIssue[]> {
  const byId = new Map<string, UpstreamIssue>();
  const maxPages = Math.ceil(maxIssues / LIST_ISSUES_MAX_ROWS) + 1;
  for (let page = 0; page < maxPages && byId.size < maxIssues; page += 1) {
    const rows = await listIssues({
      status: 'sent',
      isPublic: true,
      limit: LIST_ISSUES_MAX_ROWS,
      offset: page * LIST_ISSUES_MAX_ROWS,
    });
    let added = 0;
    for (const row of rows) {
      if (byId.size >= maxIssues) break;
      if (!byId.has(row.id)) {
        byId.set(row.id, row);
        added += 1;
      }
    }
    if (rows.length < LIST_ISSUES_MAX_ROWS || added === 0) break;
  }
  return [...byId.values()];
}
