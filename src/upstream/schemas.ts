// The configured `z`: a body of the wrong shape is described in English words (see zod.ts).
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

export const UpstreamCategorySchema = z.object({
  id: z.string(),
  name: z.string(),
  slug: z.string(),
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
});

// Required flags of subscriber fields are "not shown" upstream: everything is optional.
export const UpstreamSubscriberSchema = z.object({
  id: z.optional(z.string()),
  status: z.optional(z.enum(['subscribed', 'unsubscribed', 'bounced', 'complained', 'blocked'])),
});

export const UpstreamErrorBodySchema = z.object({
  ok: z.literal(false),
  error: z.object({ code: z.string(), message: z.string(), details: z.optional(z.unknown()) }),
});

/** The success envelope `{ ok: true, data }` around a data schema. */
export function successEnvelope<T extends z.ZodMiniType>(data: T) {
  return z.object({ ok: z.literal(true), data });
}

export const IssueListEnvelope = successEnvelope(z.array(UpstreamIssueSchema));
export const IssueEnvelope = successEnvelope(UpstreamIssueSchema);
export const CategoryListEnvelope = successEnvelope(z.array(UpstreamCategorySchema));
export const SubscriberEnvelope = successEnvelope(UpstreamSubscriberSchema);

export type UpstreamIssue = z.infer<typeof UpstreamIssueSchema>;
export type UpstreamCategory = z.infer<typeof UpstreamCategorySchema>;
export type UpstreamSubscriber = z.infer<typeof UpstreamSubscriberSchema>;

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
