import { LRUCache } from 'lru-cache';
import * as z from '../zod.js';
import type { ArchiveQuery } from '../reads/public-reads.js';
import { SLUG_PATTERN, SLUG_RULE } from '../slug.js';
import { FORMATS, type Format } from './archive-format.js';
import { firstValue, parseOrThrow, preprocess, wholeNumber } from '../validation.js';

/** The validated archive query, with the representation asked for by name, if any. */
export type ArchiveRequest = ArchiveQuery & { format?: Format | undefined };

/** The archive's answer differs by Accept, so caches must keep the representations apart (RFC 9110 §12.5.5). */
export const ARCHIVE_VARY = 'Accept';

/** Distinct archive query strings remembered with their validated form (bounded in count and bytes). */
const QUERY_MEMO_MAX_ENTRIES = 1024;
const QUERY_MEMO_MAX_BYTES = 1024 * 1024;

function createArchiveQuerySchema(maxOffset: number) {
  // Only these three are read: unknown parameters are dropped and never reach a cache key.
  return z.object({
    limit: wholeNumber(1, 100, 20, firstValue),
    offset: wholeNumber(0, maxOffset, 0, firstValue),
    category: preprocess(firstValue, z.optional(z.string().check(z.regex(SLUG_PATTERN, { error: `category ${SLUG_RULE}` })))),
    format: preprocess(firstValue, z.optional(z.enum(FORMATS, { error: `format must be one of ${FORMATS.join(', ')}` }))),
  });
}

/**
 * The archive query of GET /api/issues, validated once per distinct query string: the result
 * depends on that string alone, and a site asks for the same few pages over and over, so a
 * cached hit need not run zod.
 */
export interface ArchiveQueries {
  /**
   * The validated query of `search` (the URL's query string without `?`, as the URL holds it);
   * `parameters` reads its values when it was not validated before. Throws a VALIDATION_ERROR.
   */
  validate(search: string, parameters: () => Record<string, string[]>): Readonly<ArchiveRequest>;
}

/** @param maxOffset the largest useful offset: the archive never holds more issues than this. */
export function createArchiveQueries(maxOffset: number): ArchiveQueries {
  const schema = createArchiveQuerySchema(maxOffset);
  const memo = new LRUCache<string, Readonly<ArchiveRequest>>({
    max: QUERY_MEMO_MAX_ENTRIES,
    maxSize: QUERY_MEMO_MAX_BYTES,
    sizeCalculation: (_query, search) => 2 * search.length + 64,
  });
  return {
    validate(search, parameters) {
      let query = memo.get(search);
      if (query === undefined) {
        query = Object.freeze(parseOrThrow(schema, parameters()));
        memo.set(search, query);
      }
      return query;
    },
  };
}
