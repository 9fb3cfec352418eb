import { xmlText } from '../../core/feeds/xml.js';

/**
 * HTML text and attribute values. The XML escape serves both: it escapes `&<>"'` and drops the
 * control characters HTML forbids too, so one audited function guards every page and feed.
 */
export const escapeHtml = xmlText;

/**
 * JSON for an inline `<script type="application/ld+json">`: `<` becomes `\u003c`, so no
 * value can close the script element, and U+2028/U+2029 are escaped for older parsers.
 */
export function inlineJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/>/g, '\\u003e')
    .replace(/&/g, '\\u0026')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];

/** "15 November 2026" in UTC, written out by hand so the bytes do not depend on the ICU build. */
export function formatDate(iso: string): string {
  const date = new Date(iso);
  return `${date.getUTCDate()} ${MONTHS[date.getUTCMonth()]} ${date.getUTCFullYear()}`;
}

/** A `<time>` for an ISO date, or nothing. */
export function timeHtml(iso: string | null): string {
  return iso ? `<time datetime="${escapeHtml(iso)}">${formatDate(iso)}</time>` : '';
}

/** At most `max` characters, cut at a word boundary with an ellipsis. */
export function truncate(text: string, max: number): string {
  if (text.length <= max) return text;
  const cut = text.slice(0, max - 1);
  const space = cut.lastIndexOf(' ');
  return `${(space > max / 2 ? cut.slice(0, space) : cut).trimEnd()}…`;
}
