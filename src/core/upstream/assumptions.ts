/* Every fact the upstream's interface leaves "not shown", one constant each (docs/upstream.md "Assumptions"). */

export type ListPaging = { limitParam: string; style: 'offset' | 'page'; pagingParam: string; pageSize: number };

export const UPSTREAM_PATHS = {
  listIssues: ['newsletter', 'issues'],
  issueBySlug: ['newsletter', 'issues', 'by-slug'],
  listCategories: ['newsletter', 'categories'],
  createSubscriber: ['newsletter', 'subscribers'],
} as const satisfies Record<string, readonly string[]>;

export const LIST_ISSUES_LIMIT_PARAM = 'limit';
/** List Subscribers documents an offset, so we assume the same. */
export const LIST_ISSUES_OFFSET_PARAM = 'offset';
export const LIST_ISSUES_PAGE_PARAM = 'page';
export const LIST_ISSUES_MAX_ROWS = 200;
export const DEFAULT_LIST_PAGING: ListPaging = {
  limitParam: LIST_ISSUES_LIMIT_PARAM,
  style: 'offset',
  pagingParam: LIST_ISSUES_OFFSET_PARAM,
  pageSize: LIST_ISSUES_MAX_ROWS,
};
/** Rows when no maximum is sent (the demo upstream answers this many). */
export const LIST_ISSUES_DEFAULT_ROWS = 50;
export const NOT_FOUND_STATUS = 404;
export const isSuccessStatus = (status: number): boolean => status >= 200 && status < 300;
/** After a 429 without a usable `Retry-After`; a longer one is capped, so one odd header cannot silence the site for a day. */
export const DEFAULT_RETRY_AFTER_SECONDS = 30;
export const MAX_RETRY_AFTER_SECONDS = 600;
export const SUBSCRIBER_REFUSED = { status: 409, code: 'SUBSCRIBER_BLOCKED' } as const;
export const MAX_RESPONSE_BYTES = 16 * 1024 * 1024;
