/**
 * The slug rule of our public route (docs/contract.md "GET /api/issues/:slug"): the route
 * refuses any other slug, the upstream client never asks for one, and an issue whose slug breaks
 * it is not listed (it could not be opened).
 */
export const SLUG_PATTERN = /^[A-Za-z0-9](?:[A-Za-z0-9_-]{0,198}[A-Za-z0-9])?$/;

/** SLUG_PATTERN in words, for a VALIDATION_ERROR detail ("slug must be …", "category must be …"). */
export const SLUG_RULE = 'must be 1 to 200 letters, digits, "-" or "_", starting and ending with a letter or digit';
