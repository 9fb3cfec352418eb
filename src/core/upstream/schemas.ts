import { SLUG_PATTERN } from '../slug.js';
import * as z from '../zod.js';

/* The upstream resources (docs/upstream.md "Resources and their fields"): fields we read are checked strictly, others ignored. */

export const SUBSCRIBER_SOURCE_TYPES = ['manual', 'subscribe_page', 'social_post', 'embed', 'import', 'api', 'referral'] as const;
export const SOURCE_PLATFORMS = ['x', 'linkedin'] as const;

export const UpstreamCategorySchema = z.object({ name: z.string(), slug: z.string() });

/** A listed category must keep the slug rule `?category=` asks (else dropped); an issue's own `category` stays loose. */
export const ListedCategorySchema = z.object({ name: z.string(), slug: z.string().check(z.regex(SLUG_PATTERN)) });

export const UpstreamIssueSchema = z.object({
  id: z.string().check(z.minLength(1)),
  slug: z.nullish(z.string()),
  subject: z.string(),
  previewText: z.nullish(z.string()),
  thumbnailUrl: z.nullish(z.string()),
  contentHtml: z.nullish(z.string()),
  // Any state is accepted, so a new one is filtered out rather than failing the whole archive.
  status: z.string(),
  isPublic: z.nullish(z.boolean()),
  category: z.nullish(UpstreamCategorySchema),
  categories: z.nullish(z.array(UpstreamCategorySchema)),
  sentAt: z.nullish(z.string()),
  updatedAt: z.nullish(z.string()),
  createdAt: z.nullish(z.string()),
});

export const KNOWN_ISSUE_STATUSES: ReadonlySet<string> = new Set(['draft', 'sending', 'sent', 'failed']);
export const KNOWN_SUBSCRIBER_STATUSES: ReadonlySet<string> = new Set(['subscribed', 'unsubscribed', 'bounced', 'complained', 'blocked']);

export const UpstreamErrorBodySchema = z.object({ ok: z.literal(false), error: z.object({ code: z.string(), message: z.string() }) });

/** Read row by row, so one malformed row cannot fail the others. */
export const RowListEnvelope = z.object({ ok: z.literal(true), data: z.array(z.unknown()) });
export const IssueEnvelope = z.object({ ok: z.literal(true), data: UpstreamIssueSchema });
export const SubscriberEnvelope = z.object({ ok: z.literal(true), data: z.unknown() });

export type UpstreamIssue = z.infer<typeof UpstreamIssueSchema>;
export type UpstreamCategory = z.infer<typeof UpstreamCategorySchema>;

/** Short and plain, so a log line never names a row's content. */
const LOGGABLE_ID = /^[A-Za-z0-9_-]{1,64}$/;

export function readRows<T>(rows: readonly unknown[], schema: z.ZodMiniType<T>): { rows: T[]; droppedIds: (string | undefined)[] } {
  const parsed: T[] = [];
  const droppedIds: (string | undefined)[] = [];
  for (const row of rows) {
    const result = schema.safeParse(row);
    const id = result.success ? undefined : (row as { id?: unknown } | null)?.id;
    if (result.success) parsed.push(result.data);
    else droppedIds.push(typeof id === 'string' && LOGGABLE_ID.test(id) ? id : undefined);
  }
  return { rows: parsed, droppedIds };
}

export interface CreateSubscriberBody {
  email: string;
  optInAttestation: true;
  sourceType: (typeof SUBSCRIBER_SOURCE_TYPES)[number];
  source: string;
  sourcePlatform?: (typeof SOURCE_PLATFORMS)[number];
}
