import { LRUCache } from 'lru-cache';
import * as z from '../zod.js';
import { SLUG_PATTERN, SLUG_RULE } from '../slug.js';
import { FORMATS } from './archive-format.js';
import { searchWords } from '../reads/letter-text.js';
import { firstValue, parseOrThrow, preprocess, wholeNumber, type JsonSchemaWords } from '../validation.js';

export const ARCHIVE_VARY = 'Accept';

export const PAGE_SIZE = { min: 1, max: 100, fallback: 20 } as const;

const MAX_SEARCH_CHARACTERS = 200;
const SEARCH_RULE = `q must be at most ${MAX_SEARCH_CHARACTERS} characters`;

/** A code point is one or two UTF-16 units: only a text between the two bounds is counted. */
const withinSearchLength = (text: string) =>
  text.length <= MAX_SEARCH_CHARACTERS || (text.length <= 2 * MAX_SEARCH_CHARACTERS && [...text].length <= MAX_SEARCH_CHARACTERS);

const toSearch = (q: string | undefined) => [...new Set(searchWords(q ?? ''))].join(' ') || undefined;

export function createArchiveQuerySchema(maxOffset: number) {
  const searchText = z.string({ error: SEARCH_RULE }).check(z.refine(withinSearchLength, { error: SEARCH_RULE }));
  return z.object({
    limit: wholeNumber(PAGE_SIZE.min, PAGE_SIZE.max, PAGE_SIZE.fallback, firstValue),
    offset: wholeNumber(0, maxOffset, 0, firstValue),
    category: preprocess(firstValue, z.optional(z.string().check(z.regex(SLUG_PATTERN, { error: `category ${SLUG_RULE}` })))),
    format: preprocess(firstValue, z.optional(z.enum(FORMATS, { error: `format must be one of ${FORMATS.join(', ')}` }))),
    q: z.optional(z.pipe(preprocess(firstValue, z.optional(searchText)), z.transform(toSearch))),
  });
}

export type ArchiveRequest = z.output<ReturnType<typeof createArchiveQuerySchema>>;

/** openapi.json's words: plain data rather than zod metadata, so it stays out of the Worker bundle. */
export const ARCHIVE_QUERY_DOCS: { [Parameter in keyof ArchiveRequest]?: JsonSchemaWords } = {
  limit: { type: 'integer', description: 'Issues per page.' },
  offset: { type: 'integer', description: 'Issues to skip: at most `ARCHIVE_MAX_ISSUES` (default shown).' },
  category: { description: 'Only issues of this category (its slug).' },
  q: { type: 'string', maxLength: MAX_SEARCH_CHARACTERS, description: 'Search words, all matched (subject matches first); empty: all.' },
  format: { description: '`json` (default), `atom` or `rss`; wins over `Accept`. Feeds need `SITE_ISSUE_URL` (else 404).' },
};

export type ArchiveQueries = ReturnType<typeof createArchiveQueries>;

/** Validated once per distinct query string (without `?`): a site asks for the same few pages over and over. */
export function createArchiveQueries(maxOffset: number) {
  const schema = createArchiveQuerySchema(maxOffset);
  const memo = new LRUCache<string, Readonly<ArchiveRequest>>({
    max: 1024,
    maxSize: 1024 * 1024,
    sizeCalculation: (_q, search) => 2 * search.length + 64,
  });
  return {
    validate(search: string, parameters: () => Record<string, string[]>): Readonly<ArchiveRequest> {
      let query = memo.get(search);
      if (query === undefined) memo.set(search, (query = Object.freeze(parseOrThrow(schema, parameters()))));
      return query;
    },
  };
}
