/** `newsletter-bff/client`: types only, for `hc<AppType>()` from `hono/client`. */
export type { AppType } from './core/app.js';
export type { ErrorBody, ErrorCode, ValidationIssue } from './core/http/errors.js';
export type { SubscribeJsonInput } from './core/subscribe/input.js';
// The answers' bodies, then the shapes within them.
export type { ArchivePageBody, CategoriesBody, IssueBody, SubscribeBody } from './core/public-shapes.js';
export type { CategoryListing, IssueDetail, IssueNeighbour, IssueSummary, PublicCategory } from './core/public-shapes.js';
