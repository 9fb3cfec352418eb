/** `newsletter-bff/client`: types only, for `hc<AppType>()` from `hono/client`. */
export type { AppType } from './core/app.js';
export type { ErrorBody, ErrorCode, ValidationIssue } from './core/http/errors.js';
export type { SubscribeJsonInput } from './core/subscribe/input.js';
export type {
  ArchivePageBody,
  CategoriesBody,
  CategoryListing,
  IssueBody,
  IssueDetail,
  IssueNeighbour,
  IssueSummary,
  PublicCategory,
  SubscribeBody,
} from './core/public-shapes.js';
