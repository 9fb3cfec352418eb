import { xmlText } from '../../core/feeds/xml.js';

/** One audited escape guards every page and feed: HTML forbids the same characters. */
export const escapeHtml = xmlText;

/** JSON inside `<script>`: no value can close the element; U+2028/U+2029 escaped for older parsers. */
export function inlineJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/>/g, '\\u003e')
    .replace(/&/g, '\\u0026')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];

/** "15 November 2026" in UTC, by hand so the bytes do not depend on the ICU build. */
function formatDate(iso: string): string {
  const date = new Date(iso);
  return `${date.getUTCDate()} ${MONTHS[date.getUTCMonth()]} ${date.getUTCFullYear()}`;
}

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
