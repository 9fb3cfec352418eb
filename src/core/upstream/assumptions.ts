/* Every fact the newsletter service's interface leaves "not shown", one constant each (docs/upstream.md "Assumptions"): a wrong guess is a one-line change. */

/** How List Issues pages (none of it is shown): the guesses below unless configured (UPSTREAM_LIST_*). */
export interface ListPaging {
  limitParam: string;
  /** `offset`: the parameter counts rows to skip; `page`: it is a 1-based page number. */
  style: 'offset' | 'page';
  pagingParam: string;
  pageSize: number;
}

/** The upstream paths we call, as segments under the base URL (documented). */
export const UPSTREAM_PATHS = {
  listIssues: ['newsletter', 'issues'],
  issueBySlug: ['newsletter', 'issues', 'by-slug'],
  listCategories: ['newsletter', 'categories'],
  createSubscriber: ['newsletter', 'subscribers'],
} as const satisfies Record<string, readonly string[]>;

/** Name of List Issues' maximum-rows parameter (not shown). */
export const LIST_ISSUES_LIMIT_PARAM = 'limit';
/** Name of List Issues' paging parameter; List Subscribers documents an offset, so we assume the same (not shown). */
export const LIST_ISSUES_OFFSET_PARAM = 'offset';
/** Name of the page-number parameter when paging is set to count pages instead (not shown). */
export const LIST_ISSUES_PAGE_PARAM = 'page';
/** List Issues' documented maximum of rows per call. */
export const LIST_ISSUES_MAX_ROWS = 200;
/** Guesses, never trusted as facts: archive.ts reports when the upstream answers otherwise. */
export const DEFAULT_LIST_PAGING: ListPaging = {
  limitParam: LIST_ISSUES_LIMIT_PARAM,
  style: 'offset',
  pagingParam: LIST_ISSUES_OFFSET_PARAM,
  pageSize: LIST_ISSUES_MAX_ROWS,
};
/** Rows List Issues returns when no maximum is sent (not shown; the demo upstream answers this many). */
export const LIST_ISSUES_DEFAULT_ROWS = 50;
/** HTTP status of the NOT_FOUND error (not shown); the code NOT_FOUND is recognised at any 4xx status too. */
export const NOT_FOUND_STATUS = 404;
/** Success statuses other than Create Issue's 201 are not shown: any 2xx is accepted. */
export const isSuccessStatus = (status: number): boolean => status >= 200 && status < 300;
/** How long to hold off after a 429 without a usable `Retry-After` (no rate limits are shown). */
export const DEFAULT_RETRY_AFTER_SECONDS = 30;
/** A longer `Retry-After` is capped, so one odd header cannot silence the site for a day. */
export const MAX_RETRY_AFTER_SECONDS = 600;
/** The status and code of Create Subscriber's further error (not shown); the demo refuses a blocked address so. */
export const SUBSCRIBER_REFUSED = { status: 409, code: 'SUBSCRIBER_BLOCKED' } as const;
/** The largest answer we read (response sizes are not shown); a longer body is refused unread. */
export const MAX_RESPONSE_BYTES = 16 * 1024 * 1024;
