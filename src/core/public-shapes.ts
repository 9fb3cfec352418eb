import { PAGE_SIZE } from './routes/archive-query.js';
import { SLUG_PATTERN } from './slug.js';
import * as z from './zod.js';

// The public shapes of docs/contract.md, written once; answers are built by reads/allow-list.ts (only the types reach the Worker).

const described = <S extends z.ZodMiniType>(schema: S, description: string) => schema.check(z.meta({ description }));

export const SlugSchema = z.string().check(z.regex(SLUG_PATTERN));

export const PublicCategorySchema = z.strictObject({
  name: z.string(),
  slug: SlugSchema,
});

export const CategoryListingSchema = z.extend(PublicCategorySchema, {
  count: described(z.int().check(z.gte(0)), 'How many public issues the archive holds in this category.'),
});

const isoOrNull = (description: string) => described(z.nullable(z.iso.datetime()), description);

export const IssueSummarySchema = z.strictObject({
  slug: SlugSchema,
  subject: z.string(),
  previewText: described(z.nullable(z.string()), "The letter's preview line; null when the letter has none."),
  thumbnailUrl: described(
    z.nullable(z.url({ protocol: /^https?$/ })),
    'Only http(s) URLs, so a site can put it in `<img src>`; null when the letter has no picture, or its address is not http(s).',
  ),
  sentAt: isoOrNull('When the letter was sent; null when the upstream gives no valid date (such issues are listed last).'),
  updatedAt: isoOrNull('When the upstream last changed the issue; null when it does not say.'),
  category: described(
    z.nullable(PublicCategorySchema),
    "The issue's category; null when it has none, or when its slug could not be linked (it breaks the slug rule).",
  ),
  readingMinutes: described(
    z.nullable(z.int().check(z.gte(1))),
    "Minutes to read the letter (its words at about 230 a minute, at least 1); null where the service does not hold the letter's text.",
  ),
});

export const IssueNeighbourSchema = z.strictObject({
  slug: SlugSchema,
  subject: z.string(),
  sentAt: z.nullable(z.iso.datetime()),
});

export const IssueDetailSchema = z.extend(IssueSummarySchema, {
  readingMinutes: described(
    z.int().check(z.gte(1)),
    'Minutes to read the letter: its words (none when it has no HTML) at about 230 a minute, at least 1.',
  ),
  contentHtml: described(
    z.nullable(z.string()),
    "The issue's HTML, as the upstream holds it (sanitise it before putting it in a page of your own origin); null when the upstream has no HTML for it.",
  ),
  newer: described(z.nullable(IssueNeighbourSchema), 'The next public issue sent after this one; null for the newest.'),
  older: described(z.nullable(IssueNeighbourSchema), 'The public issue sent before this one; null for the oldest.'),
});

/** The 200 bodies of the four routes. */
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
