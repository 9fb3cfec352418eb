import type { Context } from 'hono';
import { accepts } from 'hono/accepts';

export const FORMATS = ['json', 'atom', 'rss'] as const;
export type Format = (typeof FORMATS)[number];

export const MEDIA_TYPES: Readonly<Record<Format, string>> = {
  json: 'application/json',
  atom: 'application/atom+xml',
  rss: 'application/rss+xml',
};
// JSON first: it wins a tie, and answers an Accept that accepts none. Only an Accept naming a feed is parsed.
const SUPPORTED_MEDIA_TYPES = FORMATS.map((format) => MEDIA_TYPES[format]);
const NAMES_A_FEED = /atom|rss/i;

export function negotiateFormat(c: Context, named: Format | undefined, accept: string | undefined): Format {
  if (named !== undefined) return named;
  if (accept === undefined || !NAMES_A_FEED.test(accept)) return 'json';
  const chosen = accepts(c, { header: 'Accept', supports: SUPPORTED_MEDIA_TYPES, default: MEDIA_TYPES.json, match: preferredType });
  return FORMATS[SUPPORTED_MEDIA_TYPES.indexOf(chosen)] ?? 'json';
}

/** RFC 9110 §12.5.1: the most specific matching range weighs a type; heaviest, then most specific, wins (Hono's skips `*∕*`). */
function preferredType(ranges: { type: string; q: number }[], config: { supports: string[]; default: string }): string {
  let best = { type: config.default, q: 0, specificity: 0 };
  for (const type of config.supports) {
    const [main] = type.split('/');
    let match = { q: 0, specificity: 0 };
    for (const range of ranges) {
      const name = range.type.toLowerCase();
      const specificity = name === type ? 3 : name === `${main}/*` ? 2 : name === '*/*' || name === '*' ? 1 : 0;
      if (specificity > match.specificity) match = { q: range.q, specificity };
    }
    if (match.q > 0 && (match.q > best.q || (match.q === best.q && match.specificity > best.specificity))) best = { type, ...match };
  }
  return best.type;
}
