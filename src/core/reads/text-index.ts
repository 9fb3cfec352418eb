import type { IssueSummary } from '../public-shapes.js';
import { searchWords, type LetterWords } from './letter-text.js';

/**
 * The archive's text index (docs/contract.md "Search"): per public issue, the distinct words of its
 * subject, preview text, category name and, where the service holds it, its letter, each word
 * stored once in a dictionary and named by its number. It is built with the archive index and
 * follows it as it changes; a search reads it and keeps nothing per query.
 *
 * A query word matches every word that starts with it (`garden` finds `gardens`); an issue matches
 * when each query word matches one of its words.
 */

/** What the index knows of one issue. */
export interface TextRecord {
  /** The `updatedAt` of the row the record was made from: a row with another one is read again. */
  version: string | null;
  /** Dictionary numbers of the subject's words, ascending. */
  subject: Uint32Array;
  /** Dictionary numbers of every searchable word (subject, preview, category name, letter), ascending. */
  words: Uint32Array;
  /** Words in the letter, when the letter was read; `null` when it is not known. */
  letterWords: number | null;
}

/** The fields of an issue a record is made from. */
export interface SearchableFields {
  subject: string;
  previewText: string | null;
  categoryName: string | undefined;
  /** The letter's words (letter-text.ts `letterWords`), when the letter is known. */
  letter?: Pick<LetterWords, 'words' | 'count'> | undefined;
}

/**
 * Every word of the index, once, numbered in the order first seen. Numbers are never reused, so
 * records made earlier stay valid while it grows; words no record uses any more are dropped when
 * a whole read builds it anew (`compacted`).
 */
export interface Dictionary {
  readonly size: number;
  /** The numbers of `words` (added when new), distinct and ascending. */
  numbersOf(words: Iterable<string>): Uint32Array;
  /** Approximate bytes it holds. */
  bytes(): number;
  /** For each query word, a bit set on the numbers of the words it starts (see `search`). */
  mark(queryWords: readonly string[]): Uint32Array | undefined;
  wordOf(number: number): string;
}

export function createDictionary(): Dictionary {
  const numbers = new Map<string, number>();
  const words: string[] = [];
  let wordBytes = 0;
  /** Word numbers in the words' order, for prefix ranges; made again once the dictionary has grown. */
  let sorted: Uint32Array | undefined;
  /** One bit per query word per dictionary word; reused by every search (a search never waits). */
  let marks = new Uint32Array(0);
  let marked: number[] = [];

  function sortedNumbers(): Uint32Array {
    if (sorted === undefined || sorted.length !== words.length) {
      const order = Array.from({ length: words.length }, (_, i) => i);
      order.sort((a, b) => (words[a]! < words[b]! ? -1 : 1));
      sorted = Uint32Array.from(order);
    }
    return sorted;
  }

  /** The first position in `order` whose word is not below `prefix`. */
  function lowerBound(order: Uint32Array, prefix: string): number {
    let low = 0;
    let high = order.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (words[order[middle]!]! < prefix) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  return {
    get size() {
      return words.length;
    },
    numbersOf(list) {
      const found = new Set<number>();
      for (const word of list) {
        let number = numbers.get(word);
        if (number === undefined) {
          number = words.length;
          numbers.set(word, number);
          words.push(word);
          wordBytes += word.length;
        }
        found.add(number);
      }
      return Uint32Array.from(found).sort();
    },
    bytes() {
      // The word's characters (one byte each for Latin text), its string and its map entry.
      return wordBytes + words.length * 56 + (sorted?.byteLength ?? 0) + marks.byteLength;
    },
    mark(queryWords) {
      for (const number of marked) marks[number] = 0;
      marked = [];
      if (marks.length < words.length) marks = new Uint32Array(Math.max(words.length, marks.length * 2, 1024));
      const order = sortedNumbers();
      for (let bit = 0; bit < queryWords.length; bit += 1) {
        const prefix = queryWords[bit]!;
        let any = false;
        for (let at = lowerBound(order, prefix); at < order.length; at += 1) {
          const number = order[at]!;
          if (!words[number]!.startsWith(prefix)) break;
          if (marks[number] === 0) marked.push(number);
          marks[number]! |= 1 << bit;
          any = true;
        }
        // A word the archive does not have: nothing can match all of them.
        if (!any) return undefined;
      }
      return marks;
    },
    wordOf: (number) => words[number]!,
  };
}

/** The text index of one archive index: a record per public slug, over a dictionary. */
export interface TextIndex {
  dictionary: Dictionary;
  records: Map<string, TextRecord>;
}

/** A record of `fields`, its words numbered in `dictionary`. */
export function createTextRecord(dictionary: Dictionary, version: string | null, fields: SearchableFields): TextRecord {
  const subjectWords = searchWords(fields.subject);
  const other = [fields.previewText ?? '', fields.categoryName ?? ''].join(' ');
  const all = [...subjectWords, ...searchWords(other), ...(fields.letter?.words ?? [])];
  return {
    version,
    subject: dictionary.numbersOf(subjectWords),
    words: dictionary.numbersOf(all),
    letterWords: fields.letter === undefined ? null : fields.letter.count,
  };
}

/** A record of `summary` alone (no letter): for an issue whose row did not carry it. */
export function summaryRecord(dictionary: Dictionary, summary: IssueSummary, version: string | null, letter?: SearchableFields['letter']): TextRecord {
  return createTextRecord(dictionary, version, {
    subject: summary.subject,
    previewText: summary.previewText,
    categoryName: summary.category?.name,
    letter,
  });
}

/** Bytes a record holds: its two arrays and the object around them. */
export function recordBytes(record: TextRecord): number {
  return record.subject.byteLength + record.words.byteLength + 160;
}

/** Bytes of a text index: its records and, once, its dictionary. */
export function textIndexBytes(text: TextIndex): number {
  let bytes = text.dictionary.bytes();
  for (const [slug, record] of text.records) bytes += recordBytes(record) + slug.length * 2 + 48;
  return bytes;
}

/**
 * The same records over a new dictionary holding only the words they use. Worth it when the
 * dictionary has grown well past what the records use (letters edited or unpublished since it was made).
 */
export function compacted(text: TextIndex): TextIndex {
  const dictionary = createDictionary();
  const renumber = (numbers: Uint32Array) => dictionary.numbersOf(Array.from(numbers, (number) => text.dictionary.wordOf(number)));
  const records = new Map<string, TextRecord>();
  for (const [slug, record] of text.records) {
    records.set(slug, { ...record, subject: renumber(record.subject), words: renumber(record.words) });
  }
  return { dictionary, records };
}

/** How many dictionary words the records use. */
export function wordsInUse(text: TextIndex): number {
  const used = new Uint8Array(text.dictionary.size);
  let count = 0;
  for (const record of text.records.values()) {
    for (const number of record.words) {
      if (used[number] === 0) {
        used[number] = 1;
        count += 1;
      }
    }
  }
  return count;
}

/** Query words compared together: one bit each in a 32-bit mark. */
const WORDS_PER_PASS = 32;

/**
 * The issues of `candidates` (in their order, newest first) whose words match every query word,
 * those whose subject matches more of the words first (a stable sort keeps newest first within
 * each rank). `queryWords` are search words (letter-text.ts `searchWords`), distinct.
 */
export function search(text: TextIndex, candidates: readonly IssueSummary[], queryWords: readonly string[]): IssueSummary[] {
  let matches: { issue: IssueSummary; subjectHits: number }[] = candidates.map((issue) => ({ issue, subjectHits: 0 }));
  for (let from = 0; from < queryWords.length && matches.length > 0; from += WORDS_PER_PASS) {
    const pass = queryWords.slice(from, from + WORDS_PER_PASS);
    const marks = text.dictionary.mark(pass);
    if (marks === undefined) return [];
    // Every bit of the pass (as a signed 32-bit number, which `|=` makes of `found`).
    const all = pass.length >= 32 ? -1 : ((1 << pass.length) - 1) | 0;
    const kept: typeof matches = [];
    for (const match of matches) {
      const record = text.records.get(match.issue.slug);
      if (record === undefined) continue;
      let found = 0;
      const numbers = record.words;
      for (let i = 0; i < numbers.length && found !== all; i += 1) found |= marks[numbers[i]!]!;
      if (found !== all) continue;
      let inSubject = 0;
      for (const number of record.subject) inSubject |= marks[number]!;
      kept.push({ issue: match.issue, subjectHits: match.subjectHits + bitCount(inSubject) });
    }
    matches = kept;
  }
  // Array.prototype.sort is stable: within one rank, the candidates' order (newest first) stays.
  return matches.sort((a, b) => b.subjectHits - a.subjectHits).map((match) => match.issue);
}

function bitCount(bits: number): number {
  let count = 0;
  for (let rest = bits >>> 0; rest !== 0; rest &= rest - 1) count += 1;
  return count;
}
