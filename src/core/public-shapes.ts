import { PAGE_SIZE } from './routes/archive-query.js';
import { SLUG_PATTERN } from './slug.js';
import * as z from './zod.js';

const described = <S extends z.ZodMiniType>(schema: S, description: string) => schema.check(z.meta({ description }));

export const SlugSchema = z.string().check(z.regex(SLUG_PATTERN));

export const PublicCategorySchema = z.strictObject({ name: z.string(), slug: SlugSchema });

export const CategoryListingSchema = z.extend(PublicCategorySchema, { count: described(z.int().check(z.gte(0)), 'Public issues in it.') });

export const IssueSummarySchema = z.strictObject({
  slug: SlugSchema,
  subject: z.string(),
  previewText: described(z.nullable(z.string()), 'Null when the letter has none.'),
  thumbnailUrl: described(z.nullable(z.url({ protocol: /^https?$/ })), 'http(s) only, for `<img src>`; else null.'),
  sentAt: described(z.nullable(z.iso.datetime()), 'Null when the upstream gives no valid date (listed last).'),
  updatedAt: described(z.nullable(z.iso.datetime()), 'When the upstream last changed the issue, if it says.'),
  category: described(z.nullable(PublicCategorySchema), 'Null when none, or when its slug breaks the slug rule.'),
  readingMinutes: described(z.nullable(z.int().check(z.gte(1))), 'At about 230 words a minute; null without the letter text.'),
});

export const IssueNeighbourSchema = z.strictObject({ slug: SlugSchema, subject: z.string(), sentAt: z.nullable(z.iso.datetime()) });

export const IssueDetailSchema = z.extend(IssueSummarySchema, {
  readingMinutes: described(z.int().check(z.gte(1)), 'At about 230 words a minute, at least 1.'),
  contentHtml: described(z.nullable(z.string()), "The upstream's HTML: sanitise it before putting it in your own origin's page."),
  newer: described(z.nullable(IssueNeighbourSchema), 'Null for the newest.'),
  older: described(z.nullable(IssueNeighbourSchema), 'Null for the oldest.'),
});

export const ArchivePageBodySchema = z.strictObject({
  ok: z.literal(true),
  data: z.array(IssueSummarySchema),
  meta: z.strictObject({
    total: z.int().check(z.gte(0)),
    limit: z.int().check(z.gte(PAGE_SIZE.min), z.lte(PAGE_SIZE.max)),
    offset: z.int().check(z.gte(0)),
    nextOffset: described(z.nullable(z.int().check(z.gte(0))), 'The offset of the next page; null on the last one.'),
    previousOffset: described(z.nullable(z.int().check(z.gte(0))), 'The offset of the page before; null on the first one.'),
  }),
});
export const IssueBodySchema = z.strictObject({ ok: z.literal(true), data: IssueDetailSchema });
export const CategoriesBodySchema = z.strictObject({ ok: z.literal(true), data: z.array(CategoryListingSchema) });
export const SubscribeBodySchema = z.strictObject({ ok: z.literal(true), data: z.strictObject({ accepted: z.literal(true) }) });

export type PublicCategory = z.infer<typeof PublicCategorySchema>;
export type CategoryListing = z.infer<typeof CategoryListingSchema>;
export type IssueSummary = z.infer<typeof IssueSummarySchema>;
export type IssueNeighbour = z.infer<typeof IssueNeighbourSchema>;
export type IssueDetail = z.infer<typeof IssueDetailSchema>;
export type ArchivePageBody = z.infer<typeof ArchivePageBodySchema>;
export type IssueBody = z.infer<typeof IssueBodySchema>;
export type CategoriesBody = z.infer<typeof CategoriesBodySchema>;
export type SubscribeBody = z.infer<typeof SubscribeBodySchema>;
