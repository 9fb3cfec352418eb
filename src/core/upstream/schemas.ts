import { SLUG_PATTERN } from '../slug.js';
// The configured `z`: a body of the wrong shape is described in English words (see core/zod.ts).
import * as z from '../zod.js';

/**
 * zod schemas of the upstream resources we read (docs/upstream.md "Resources and their fields").
 * Unknown extra fields are tolerated and stripped; fields we read are checked strictly.
 * Fields we never read (stats, audience, workspaceId, …) are not required, so a change to
 * them cannot take a public site down.
 */

/** `sourceType` values of Create Subscriber. */
export const SUBSCRIBER_SOURCE_TYPES = ['manual', 'subscribe_page', 'social_post', 'embed', 'import', 'api', 'referral'] as const;
export const SOURCE_PLATFORMS = ['x', 'linkedin'] as const;

// A category's upstream id is never shown, so it is not read.
export const UpstreamCategorySchema = z.object({
  name: z.string(),
  slug: z.string(),
});

/**
 * A row of List Categories. Its slug must keep the issue slug rule: a site puts it in a path and
 * a link (`categories/<slug>/`), and `?category=` refuses any other, so a category like `c&d`
 * could never be opened. Such a row is dropped and counted like a malformed one. An issue's own
 * `category` keeps the loose schema (a bad one there must not drop the issue; core/public-shapes.ts hides it).
 */
export const ListedCategorySchema = z.object({
  name: z.string(),
  slug: z.string().check(z.regex(SLUG_PATTERN)),
});

export const UpstreamIssueSchema = z.object({
  id: z.string().check(z.minLength(1)),
  slug: z.nullish(z.string()),
  subject: z.string(),
  previewText: z.nullish(z.string()),
  thumbnailUrl: z.nullish(z.string()),
  contentHtml: z.nullish(z.string()),
  // Documented as draft | sending | sent | failed. Only `sent` matters to us, so a state added
  // later is accepted here and filtered out by the routes rather than failing the whole archive.
  status: z.string(),
  isPublic: z.nullish(z.boolean()),
  category: z.nullish(UpstreamCategorySchema),
  categories: z.nullish(z.array(UpstreamCategorySchema)),
  sentAt: z.nullish(z.string()),
  // Read to tell an edit (a new updatedAt) and to tell an order by creation from one by sending.
  updatedAt: z.nullish(z.string()),
  createdAt: z.nullish(z.string()),
});

/** The documented issue states; another one is tolerated (never public) and logged once. */
export const KNOWN_ISSUE_STATUSES: ReadonlySet<string> = new Set(['draft', 'sending', 'sent', 'failed']);
/** The documented subscriber states; another one (`pending`, say) is logged once, never refused. */
export const KNOWN_SUBSCRIBER_STATUSES: ReadonlySet<string> = new Set(['subscribed', 'unsubscribed', 'bounced', 'complained', 'blocked']);

/**
 * Nothing of the subscriber record decides our answer: the upstream accepted the subscription
 * once it answered the success envelope, whatever the record holds (docs/contract.md
 * "POST /api/subscribe"). Its status is read only to tell an owner about a new state.
 */
export interface UpstreamSubscriber {
  status?: string | undefined;
}

export const UpstreamErrorBodySchema = z.object({
  ok: z.literal(false),
  error: z.object({ code: z.string(), message: z.string(), details: z.optional(z.unknown()) }),
});

/** The success envelope `{ ok: true, data }` around a data schema. */
export function successEnvelope<T extends z.ZodMiniType>(data: T) {
  return z.object({ ok: z.literal(true), data });
}

/** A list is read row by row (`readRows`), so one malformed row cannot fail the others. */
export const RowListEnvelope = successEnvelope(z.array(z.unknown()));
export const IssueEnvelope = successEnvelope(UpstreamIssueSchema);
export const SubscriberEnvelope = successEnvelope(z.unknown());

export type UpstreamIssue = z.infer<typeof UpstreamIssueSchema>;
export type UpstreamCategory = z.infer<typeof UpstreamCategorySchema>;

/** An id worth naming in a log line: short and plain, so never a row's content. */
const LOGGABLE_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** The rows of a list that match `schema`, and the ids (when readable) of those that do not. */
export function readRows<T>(rows: readonly unknown[], schema: z.ZodMiniType<T>): { rows: T[]; droppedIds: (string | undefined)[] } {
  const parsed: T[] = [];
  const droppedIds: (string | undefined)[] = [];
  for (const row of rows) {
    const result = schema.safeParse(row);
    if (result.success) {
      parsed.push(result.data);
      continue;
    }
    const id = typeof row === 'object' && row !== null ? (row as { id?: unknown }).id : undefined;
    droppedIds.push(typeof id === 'string' && LOGGABLE_ID.test(id) ? id : undefined);
  }
  return { rows: parsed, droppedIds };
}

/** The query we send to List Issues (docs/upstream.md "List Issues"); paging names are assumptions.ts's. */
export interface ListIssuesQuery {
  status: 'draft' | 'sending' | 'sent' | 'failed';
  isPublic: boolean;
  limit: number;
  offset: number;
}

/** The body we send to Create Subscriber, built field by field by the subscribe route. */
export interface CreateSubscriberBody {
  email: string;
  optInAttestation: true;
  sourceType: (typeof SUBSCRIBER_SOURCE_TYPES)[number];
  source: string;
  sourcePlatform?: (typeof SOURCE_PLATFORMS)[number];
}
