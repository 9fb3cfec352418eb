import {
  LIST_ISSUES_DEFAULT_ROWS,
  LIST_ISSUES_LIMIT_PARAM,
  LIST_ISSUES_OFFSET_PARAM,
  UPSTREAM_PATHS,
} from '../../../src/core/upstream/assumptions.js';

/**
 * How this upstream differs from what docs/upstream.md "Assumptions" guesses. Each knob makes
 * the fake answer as an upstream would if that guess were wrong; the defaults are the guesses.
 */
export interface UpstreamVariant {
  /** The name it reads the row limit from; under another name ours is ignored (default page). */
  limitParam?: string;
  /** Paging by offset (`offset`) or by a 1-based page number (`page`), under `param`. */
  paging?: { style: 'offset'; param?: string } | { style: 'page'; param: string };
  /** Rows it answers when no limit reaches it. */
  defaultRows?: number;
  /** Rows per page at most, whatever is asked. */
  pageCap?: number;
  /** This issue (by slug) comes back with `subject: null`, in lists and alone. */
  nullSubjectSlug?: string;
  /** Create Subscriber answers 200 with a subscriber whose status is `pending`. */
  pendingSubscribers?: boolean;
  /**
   * The order List Issues answers in: newest `createdAt` first (the default: the newest first
   * for letters drafted and sent in order, as most are, while an old draft sent today lands
   * deep), newest `sentAt` first, or oldest `sentAt` first.
   */
  order?: ListOrder;
  /** List pages carry an ETag, a Last-Modified or both, and answer 304 when they still match. */
  validators?: 'etag' | 'last-modified' | 'both';
  /** List rows carry no `contentHtml` (a list of summaries): every letter is read by slug. */
  listWithoutLetters?: boolean;
}

export type ListOrder = 'created' | 'newest-sent' | 'oldest-sent';

export const pathOf = (segments: readonly string[]): string => `/${segments.join('/')}`;

/**
 * Rewrites a List Issues query from what `variant` reads to the core's own parameter names, so
 * the demo upstream answers it as that variant would. Other paths pass through.
 */
export function translateListQuery(url: URL, basePath: string, variant: UpstreamVariant): URL {
  if (url.pathname !== basePath + pathOf(UPSTREAM_PATHS.listIssues)) return url;
  const limitParam = variant.limitParam ?? LIST_ISSUES_LIMIT_PARAM;
  const paging = variant.paging ?? { style: 'offset' };
  const pageParam = paging.param ?? LIST_ISSUES_OFFSET_PARAM;
  const limit = url.searchParams.get(limitParam);
  const position = url.searchParams.get(pageParam);
  let rows = limit === null ? (variant.defaultRows ?? LIST_ISSUES_DEFAULT_ROWS) : Number(limit);
  if (variant.pageCap !== undefined && rows > variant.pageCap) rows = variant.pageCap;
  const out = new URL(url);
  for (const name of [limitParam, pageParam, LIST_ISSUES_LIMIT_PARAM, LIST_ISSUES_OFFSET_PARAM]) out.searchParams.delete(name);
  out.searchParams.set(LIST_ISSUES_LIMIT_PARAM, String(rows));
  if (position !== null) {
    const offset = paging.style === 'page' ? (Number(position) - 1) * rows : Number(position);
    out.searchParams.set(LIST_ISSUES_OFFSET_PARAM, String(offset));
  }
  return out;
}

/** True when the variant changes a success body (so it must be parsed and rewritten). */
export function rewritesBodies(variant: UpstreamVariant): boolean {
  return variant.nullSubjectSlug !== undefined || variant.pendingSubscribers === true || variant.listWithoutLetters === true;
}

/** The variant's success body for `operation`, from the core's. */
export function rewriteBody(operation: string, body: unknown, variant: UpstreamVariant): unknown {
  if (typeof body !== 'object' || body === null || !('data' in body)) return body;
  const envelope = body as { data: unknown };
  const nullSubject = (issue: unknown): unknown =>
    typeof issue === 'object' && issue !== null && (issue as { slug?: unknown }).slug === variant.nullSubjectSlug
      ? { ...issue, subject: null }
      : issue;
  const withoutLetter = (issue: unknown): unknown => {
    if (typeof issue !== 'object' || issue === null) return issue;
    const { contentHtml: _letter, ...rest } = issue as Record<string, unknown>;
    return rest;
  };
  if (operation === 'listIssues' && Array.isArray(envelope.data) && (variant.nullSubjectSlug !== undefined || variant.listWithoutLetters)) {
    const same = (issue: unknown): unknown => issue;
    return {
      ...envelope,
      data: envelope.data
        .map(variant.nullSubjectSlug !== undefined ? nullSubject : same)
        .map(variant.listWithoutLetters ? withoutLetter : same),
    };
  }
  if (variant.nullSubjectSlug !== undefined && operation === 'issueBySlug') return { ...envelope, data: nullSubject(envelope.data) };
  if (variant.pendingSubscribers && operation === 'createSubscriber' && typeof envelope.data === 'object') {
    return { ...envelope, data: { ...(envelope.data as object), status: 'pending' } };
  }
  return body;
}
