/** docs/contract.md "GET /api/issues/:slug": no other slug is asked for, and an issue with another is not listed. */
export const SLUG_PATTERN = /^[A-Za-z0-9](?:[A-Za-z0-9_-]{0,198}[A-Za-z0-9])?$/;

export const SLUG_RULE = 'must be 1 to 200 letters, digits, "-" or "_", starting and ending with a letter or digit';
