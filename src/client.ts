/**
 * The package's typed-client entry (`newsletter-bff/client`): types only, nothing runs. A site
 * builds `hc<AppType>()` from `hono/client` with them and compiles against our declarations
 * (dist/*.d.ts) under its own compiler settings.
 */
export type { AppType } from './core/app.js';
/** ErrorBody: the body of every error answer (docs/contract.md "Errors we return"). */
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
