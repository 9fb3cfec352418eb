import type { IssueSummary } from '../public-shapes.js';
import * as z from '../zod.js';
import { MAX_WORD_LENGTH, hashOf, scanWords, searchWords, spells, visibleText, wordAt } from './letter-text.js';

// Each word's slots packed as gaps in variable-length bytes (docs/contract.md "Search"); slots added since the last packing
// keep a word list each until a whole read compacts the store.

/** `version`: its row's `updatedAt`; `subject`: word numbers, ascending; `letterWords`: `null` when the letter was not read. */
type TextDoc = { version: string | null; subject: Uint32Array; letterWords: number | null };

// Open addressing on a hash of the characters: a known word of a letter is found without making a string of it.
function createDictionary() {
  const words: string[] = [];
  const hashes: number[] = [];
  let wordBytes = 0;
  // Word number + 1 (0: empty); a power of two long, at most half full.
  let table = new Int32Array(1024);
  let sorted: Uint32Array | undefined;

  function find(text: string, start: number, end: number, make?: () => string): number | undefined {
    const hash = hashOf(text, start, end);
    let at = hash & (table.length - 1);
    for (let entry = table[at]!; entry !== 0; entry = table[at]!) {
      if (hashes[entry - 1] === hash && spells(words[entry - 1]!, text, start, end)) return entry - 1;
      at = (at + 1) & (table.length - 1);
    }
    if (make === undefined) return undefined;
    const number = words.length;
    words.push(make());
    hashes.push(hash);
    wordBytes += words[number]!.length;
    table[at] = number + 1;
    if (2 * words.length > table.length) {
      table = new Int32Array(table.length * 2);
      const mask = table.length - 1;
      for (let known = 0; known < words.length; known += 1) {
        let slot = hashes[known]! & mask;
        while (table[slot] !== 0) slot = (slot + 1) & mask;
        table[slot] = known + 1;
      }
    }
    return number;
  }

  return {
    size: () => words.length,
    add: (word: string) => find(word, 0, word.length, () => word)!,
    addRun: (text: string, start: number, end: number, upper: boolean) =>
      find(text, start, end, () => wordAt(text, start, end, upper, false))!,
    matching(prefix: string): number[] {
      if (prefix.length < MIN_PREFIX_LENGTH) {
        const whole = find(prefix, 0, prefix.length);
        return whole === undefined ? [] : [whole];
      }
      if (sorted?.length !== words.length) sorted = Uint32Array.from(words.keys()).sort((a, b) => (words[a]! < words[b]! ? -1 : 1));
      let low = 0;
      let high = sorted.length;
      while (low < high) {
        const middle = (low + high) >>> 1;
        if (words[sorted[middle]!]! < prefix) low = middle + 1;
        else high = middle;
      }
      const found: number[] = [];
      for (let at = low; at < sorted.length && words[sorted[at]!]!.startsWith(prefix); at += 1) found.push(sorted[at]!);
      return found;
    },
    wordOf: (number: number) => words[number]!,
    bytes: () => wordBytes + words.length * 40 + table.byteLength,
  };
}

type Dictionary = ReturnType<typeof createDictionary>;
type Packed = { slots: number; offsets: Uint32Array; bytes: Uint8Array };

// `recent`: the words of slot `packed.slots + i`, ascending; `marks`: scratch, one per word, reset after each use.
type TextStore = { dictionary: Dictionary; docs: TextDoc[]; packed: Packed; recent: Uint32Array[]; marks: Int32Array };

export type TextIndex = { store: TextStore; slots: Map<string, number> };

function packedStore(dictionary: Dictionary, docs: TextDoc[], offsets: Uint32Array, bytes: Uint8Array): TextStore {
  return { dictionary, docs, packed: { slots: docs.length, offsets, bytes }, recent: [], marks: new Int32Array(0) };
}

export const createTextStore = () => packedStore(createDictionary(), [], new Uint32Array(1), new Uint8Array(0));

function marksOf(store: TextStore, room = 0): Int32Array {
  if (store.marks.length < store.dictionary.size() + room) {
    const grown = new Int32Array(Math.max(1024, 2 * (store.dictionary.size() + room)));
    grown.set(store.marks);
    store.marks = grown;
  }
  return store.marks;
}

function numbersOfText(store: TextStore, text: string, found: number[]): number {
  let count = 0;
  // Room for every new word the text could add (a character and a separator each).
  const marks = marksOf(store, (text.length >>> 1) + 1);
  scanWords(text, (source, start, end, upper, apostrophe) => {
    const number =
      apostrophe || end - start > MAX_WORD_LENGTH
        ? store.dictionary.add(wordAt(source, start, end, upper, apostrophe))
        : store.dictionary.addRun(source, start, end, upper);
    count += 1;
    if (marks[number] === 1) return;
    marks[number] = 1;
    found.push(number);
  });
  return count;
}

export function addSummary(store: TextStore, summary: IssueSummary, version: string | null, letterHtml?: string): number {
  const subject = [...new Set(searchWords(summary.subject).map((word) => store.dictionary.add(word)))];
  const found: number[] = [];
  numbersOfText(store, `${summary.subject} ${summary.previewText ?? ''} ${summary.category?.name ?? ''}`, found);
  const letterWords = letterHtml === undefined ? null : numbersOfText(store, visibleText(letterHtml), found);
  const marks = marksOf(store);
  for (const number of found) marks[number] = 0;
  const slot = store.docs.length;
  store.docs.push({ version, subject: Uint32Array.from(subject).sort(), letterWords });
  store.recent.push(Uint32Array.from(found).sort());
  return slot;
}

export function summaryTextIndex(all: readonly IssueSummary[], versionOf: (slug: string) => string | null): TextIndex {
  const store = createTextStore();
  return compacted({ store, slots: new Map(all.map((summary) => [summary.slug, addSummary(store, summary, versionOf(summary.slug))])) });
}

export const documentOf = (text: TextIndex, slug: string): TextDoc | undefined => text.store.docs[text.slots.get(slug) ?? -1];

function forEachPackedSlot({ offsets, bytes }: Packed, word: number, visit: (slot: number) => void): void {
  if (word + 1 >= offsets.length) return;
  let slot = 0;
  let gap = 0;
  let shift = 0;
  for (let at = offsets[word]!, end = offsets[word + 1]!; at < end; at += 1) {
    const byte = bytes[at]!;
    gap += (byte & 0x7f) * 2 ** shift;
    shift += 7;
    if (byte & 0x80) continue;
    slot += gap;
    visit(slot);
    gap = 0;
    shift = 0;
  }
}

export function compacted({ store, slots }: TextIndex): TextIndex {
  const newSlot = new Int32Array(store.docs.length).fill(-1);
  const kept = [...new Set(slots.values())].sort((a, b) => a - b);
  for (const [at, slot] of kept.entries()) newSlot[slot] = at;
  const lists = Array.from({ length: store.dictionary.size() }, (_, word) => {
    const list: number[] = [];
    forEachPackedSlot(store.packed, word, (slot) => newSlot[slot]! >= 0 && list.push(newSlot[slot]!));
    return list;
  });
  store.recent.forEach((words, i) => {
    const renumbered = newSlot[store.packed.slots + i]!;
    if (renumbered >= 0) for (const word of words) lists[word]!.push(renumbered);
  });
  const dictionary = createDictionary();
  const wordNumber = new Int32Array(lists.length).fill(-1);
  const bytes = new Uint8Array(5 * lists.reduce((total, list) => total + list.length, 0));
  const offsets = [0];
  let length = 0;
  lists.forEach((list, word) => {
    if (list.length === 0) return;
    wordNumber[word] = dictionary.add(store.dictionary.wordOf(word));
    for (let i = 0; i < list.length; i += 1) {
      let gap = i === 0 ? list[0]! : list[i]! - list[i - 1]!;
      while (gap >= 0x80) {
        bytes[length++] = (gap & 0x7f) | 0x80;
        gap >>>= 7;
      }
      bytes[length++] = gap;
    }
    offsets.push(length);
  });
  const docs = kept.map((slot): TextDoc => {
    const doc = store.docs[slot]!;
    return { ...doc, subject: Uint32Array.from(doc.subject, (word) => wordNumber[word]!).sort() };
  });
  const renumbered = new Map([...slots].map(([slug, slot]) => [slug, newSlot[slot]!]));
  return { store: packedStore(dictionary, docs, Uint32Array.from(offsets), bytes.slice(0, length)), slots: renumbered };
}

export const worthCompacting = (text: TextIndex) => text.store.recent.length > 0 || text.store.docs.length > text.slots.size;

export function textIndexBytes({ store, slots }: TextIndex): number {
  let bytes = store.dictionary.bytes() + store.packed.bytes.byteLength + store.packed.offsets.byteLength + store.marks.byteLength;
  for (const words of store.recent) bytes += 100 + words.byteLength;
  for (const doc of store.docs) bytes += 160 + doc.subject.byteLength;
  for (const slug of slots.keys()) bytes += 2 * slug.length + 60;
  return bytes;
}

const WORDS_PER_PASS = 32;
/** A shorter query word matches only itself (`a` would otherwise match most words of every letter). */
const MIN_PREFIX_LENGTH = 3;

/** The `candidates` matching every query word, those whose subject matches more of them first, else in their order. */
export function search({ store, slots }: TextIndex, candidates: readonly IssueSummary[], queryWords: readonly string[]): IssueSummary[] {
  if (queryWords.length === 0) return [...candidates];
  const found = new Uint32Array(store.docs.length);
  const missed = new Uint8Array(store.docs.length);
  const subjectHits = new Uint8Array(store.docs.length);
  for (let from = 0; from < queryWords.length; from += WORDS_PER_PASS) {
    const pass = queryWords.slice(from, from + WORDS_PER_PASS);
    const marks = marksOf(store);
    const marked: number[] = [];
    found.fill(0);
    pass.forEach((queryWord, bit) => {
      for (const word of store.dictionary.matching(queryWord)) {
        if (marks[word] === 0) marked.push(word);
        marks[word]! |= 1 << bit;
        forEachPackedSlot(store.packed, word, (slot) => (found[slot]! |= 1 << bit));
      }
    });
    store.recent.forEach((words, i) => {
      let bits = 0;
      for (const word of words) bits |= marks[word]!;
      found[store.packed.slots + i] = bits;
    });
    const all = 2 ** pass.length - 1;
    for (const slot of slots.values()) {
      if (found[slot] !== all) missed[slot] = 1;
      if (missed[slot] === 1) continue;
      let bits = 0;
      for (const word of store.docs[slot]!.subject) bits |= marks[word]!;
      for (; bits !== 0; bits &= bits - 1) subjectHits[slot]! += 1;
    }
    for (const word of marked) marks[word] = 0;
  }
  const matches: { issue: IssueSummary; rank: number }[] = [];
  for (const issue of candidates) {
    const slot = slots.get(issue.slug);
    if (slot !== undefined && missed[slot] === 0) matches.push({ issue, rank: subjectHits[slot]! });
  }
  return matches.sort((a, b) => b.rank - a.rank).map((match) => match.issue);
}

export const EncodedTextIndexSchema = z.object({
  words: z.string(),
  offsets: z.string(),
  postings: z.string(),
  docs: z.array(z.tuple([z.string(), z.nullable(z.string()), z.string(), z.nullable(z.number())])),
});
type EncodedTextIndex = z.infer<typeof EncodedTextIndexSchema>;

export function encodeTextIndex(text: TextIndex): EncodedTextIndex {
  const { store, slots } = worthCompacting(text) ? compacted(text) : text;
  const slugOf = new Map([...slots].map(([slug, slot]) => [slot, slug]));
  return {
    words: Array.from({ length: store.dictionary.size() }, (_, number) => store.dictionary.wordOf(number)).join('\n'),
    offsets: numbersToBase64(store.packed.offsets),
    postings: toBase64(store.packed.bytes),
    docs: store.docs.map((doc, slot) => [slugOf.get(slot)!, doc.version, numbersToBase64(doc.subject), doc.letterWords]),
  };
}

export function decodeTextIndex(encoded: EncodedTextIndex): TextIndex | undefined {
  const dictionary = createDictionary();
  const words = encoded.words === '' ? [] : encoded.words.split('\n');
  for (const word of words) dictionary.add(word);
  const offsets = numbersFromBase64(encoded.offsets);
  const bytes = fromBase64(encoded.postings);
  if (dictionary.size() !== words.length || offsets?.length !== words.length + 1 || offsets[0] !== 0) return undefined;
  for (let word = 0; word < words.length; word += 1) if (offsets[word]! > offsets[word + 1]!) return undefined;
  if (!bytes || offsets[words.length] !== bytes.byteLength) return undefined;
  const docs: TextDoc[] = [];
  const slots = new Map<string, number>();
  for (const [slug, version, subject, letterWords] of encoded.docs) {
    const subjectWords = numbersFromBase64(subject);
    if (!subjectWords || slots.has(slug) || subjectWords.some((word) => word >= words.length)) return undefined;
    slots.set(slug, docs.length);
    docs.push({ version, subject: subjectWords, letterWords });
  }
  return { store: packedStore(dictionary, docs, offsets, bytes), slots };
}

// Little-endian whatever the platform; decoded number by number, as a view would move every small array off the heap.
function numbersToBase64(numbers: Uint32Array): string {
  const bytes = new Uint8Array(numbers.length * 4);
  const view = new DataView(bytes.buffer);
  for (const [i, number] of numbers.entries()) view.setUint32(i * 4, number, true);
  return toBase64(bytes);
}

function numbersFromBase64(text: string): Uint32Array | undefined {
  const bytes = fromBase64(text);
  if (!bytes || bytes.byteLength % 4 !== 0) return undefined;
  const view = new DataView(bytes.buffer);
  return Uint32Array.from({ length: bytes.byteLength / 4 }, (_, i) => view.getUint32(i * 4, true));
}

function toBase64(bytes: Uint8Array): string {
  let binary = '';
  for (let i = 0; i < bytes.length; i += 4096) binary += String.fromCharCode(...bytes.subarray(i, i + 4096));
  return btoa(binary);
}

function fromBase64(text: string): Uint8Array | undefined {
  try {
    return Uint8Array.from(atob(text), (char) => char.charCodeAt(0));
  } catch {
    return undefined;
  }
}
