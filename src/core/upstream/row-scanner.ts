/*
 * Reads a List Issues answer `{ ok, data: [row, …] }` from its text keeping only the row members
 * we read. JSON.parse of a whole page builds every member of every row, the editor state
 * (`contentJson`, often as large as the letter) included, only for the schema to strip it: for
 * a page of fat rows that tree is several times the page's size, all held at once. Here the
 * members we do not read are checked (the text must still be JSON) and stepped over without
 * being built, and each kept value is built by JSON.parse of its own text, which makes new
 * strings rather than slices that would keep the whole page text alive (docs/dependencies.md
 * says why this is not a streaming JSON package).
 */

/** JSON whitespace (RFC 8259 §2). Sticky patterns: each is tried exactly at `lastIndex`. */
const WHITESPACE = /[ \t\n\r]*/y;
/** A string's characters up to its closing quote: no quote, backslash or control character. */
const PLAIN_CHARACTERS = /[^"\\\u0000-\u001f]*/y;
/** What may follow a backslash: one of the short escapes, or `u` and four hex digits. */
const ESCAPE = /["\\/bfnrt]|u[0-9A-Fa-f]{4}/y;
const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
const LITERAL = /true|false|null/y;

const OBJECT = 1;
const ARRAY = 2;

function fail(text: string, at: number): never {
  throw new SyntaxError(at >= text.length ? 'Unexpected end of JSON input' : `Unexpected token in JSON at position ${at}`);
}

/** Where `pattern` stops matching from `at` (it may match nothing). */
function after(pattern: RegExp, text: string, at: number): number {
  pattern.lastIndex = at;
  return pattern.test(text) ? pattern.lastIndex : at;
}

const skipWhitespace = (text: string, at: number) => after(WHITESPACE, text, at);

/** The end of the string that starts (with its quote) at `at`. */
function skipString(text: string, at: number): number {
  if (text.charCodeAt(at) !== 0x22) fail(text, at);
  let index = at + 1;
  // Bounded: every turn moves past a run of characters and an escape, or returns.
  for (;;) {
    index = after(PLAIN_CHARACTERS, text, index);
    const code = text.charCodeAt(index);
    if (code === 0x22) return index + 1;
    if (code !== 0x5c) fail(text, index);
    const escaped = after(ESCAPE, text, index + 1);
    if (escaped === index + 1) fail(text, index + 1);
    index = escaped;
  }
}

/** Past a member's name and its colon, from `at` (whitespace before the name allowed). */
function skipName(text: string, at: number): number {
  const colon = skipWhitespace(text, skipString(text, skipWhitespace(text, at)));
  if (text.charCodeAt(colon) !== 0x3a) fail(text, colon);
  return colon + 1;
}

/**
 * The end of the JSON value at `at` (whitespace before it allowed), checked but not built. Nested
 * containers are followed with a stack of their kinds, not by recursion, so no depth of nesting
 * can overflow the call stack.
 */
export function skipValue(text: string, at: number): number {
  const open: number[] = [];
  let index = at;
  // Bounded: every turn moves `index` forward through the text or fails.
  for (;;) {
    index = skipWhitespace(text, index);
    const code = text.charCodeAt(index);
    if (code === 0x7b || code === 0x5b) {
      const inside = skipWhitespace(text, index + 1);
      const close = code === 0x7b ? 0x7d : 0x5d;
      if (text.charCodeAt(inside) !== close) {
        open.push(code === 0x7b ? OBJECT : ARRAY);
        index = code === 0x7b ? skipName(text, inside) : inside;
        continue;
      }
      index = inside + 1;
    } else if (code === 0x22) {
      index = skipString(text, index);
    } else {
      const end = Math.max(after(NUMBER, text, index), after(LITERAL, text, index));
      if (end === index) fail(text, index);
      index = end;
    }
    // A value ended: close what it ends, or go on to the next member or element.
    for (;;) {
      if (open.length === 0) return index;
      index = skipWhitespace(text, index);
      const next = text.charCodeAt(index);
      const kind = open[open.length - 1];
      if (next === 0x2c) {
        index = kind === OBJECT ? skipName(text, index + 1) : index + 1;
        break;
      }
      if (next !== (kind === OBJECT ? 0x7d : 0x5d)) fail(text, index);
      open.pop();
      index += 1;
    }
  }
}

/**
 * Reads the members of the object at `at` one by one: `take(name, start)` is told each member's
 * name and where its value starts, and returns where the value ends when it read it (else the
 * value is checked and skipped here). Returns the end of the object.
 */
function eachMember(text: string, at: number, take: (name: string, start: number) => number | undefined): number {
  let index = skipWhitespace(text, at);
  if (text.charCodeAt(index) !== 0x7b) fail(text, index);
  index = skipWhitespace(text, index + 1);
  if (text.charCodeAt(index) === 0x7d) return index + 1;
  // Bounded: every turn reads one member and moves past it.
  for (;;) {
    const nameStart = skipWhitespace(text, index);
    const nameEnd = skipString(text, nameStart);
    const name = JSON.parse(text.slice(nameStart, nameEnd)) as string;
    const start = skipWhitespace(text, skipName(text, nameStart));
    const end = take(name, start) ?? skipValue(text, start);
    index = skipWhitespace(text, end);
    const next = text.charCodeAt(index);
    if (next === 0x7d) return index + 1;
    if (next !== 0x2c) fail(text, index);
    index += 1;
  }
}

/** One row with only the members named in `fields`; anything but an object is read as `null` (dropped like it). */
function readRow(text: string, at: number, fields: ReadonlySet<string>): { row: unknown; end: number } {
  const start = skipWhitespace(text, at);
  if (text.charCodeAt(start) !== 0x7b) return { row: null, end: skipValue(text, start) };
  const row: Record<string, unknown> = {};
  const end = eachMember(text, start, (name, valueStart) => {
    if (!fields.has(name)) return undefined;
    const valueEnd = skipValue(text, valueStart);
    // A copy, never a slice of the page: JSON.parse makes new strings.
    row[name] = JSON.parse(text.slice(valueStart, valueEnd));
    return valueEnd;
  });
  return { row, end };
}

/** The rows of the array that starts at `at`, each read by `readRow`, and where the array ends. */
function readRowArray(text: string, at: number, fields: ReadonlySet<string>): { rows: unknown[]; end: number } {
  const rows: unknown[] = [];
  let index = skipWhitespace(text, at + 1);
  if (text.charCodeAt(index) === 0x5d) return { rows, end: index + 1 };
  // Bounded: every turn reads one row and moves past it.
  for (;;) {
    const { row, end } = readRow(text, index, fields);
    rows.push(row);
    index = skipWhitespace(text, end);
    const next = text.charCodeAt(index);
    if (next === 0x5d) return { rows, end: index + 1 };
    if (next !== 0x2c) fail(text, index);
    index += 1;
  }
}

/**
 * Parses a list envelope `{ ok, data: [...] }` as JSON.parse would, except that each object row
 * of `data` holds only the members named in `fields`, other members of the envelope are left
 * out, and a row that is not an object is `null`. Any text that is not JSON throws a
 * SyntaxError, as JSON.parse does, wherever the fault lies (in a member left out too).
 */
export function parseRowList(text: string, fields: ReadonlySet<string>): unknown {
  try {
    return readEnvelope(text, fields);
  } finally {
    // V8 remembers the last text a pattern matched (RegExp.input): let go of the page's.
    after(WHITESPACE, '', 0);
  }
}

function readEnvelope(text: string, fields: ReadonlySet<string>): unknown {
  const start = skipWhitespace(text, 0);
  if (text.charCodeAt(start) !== 0x7b) return JSON.parse(text);
  const envelope: Record<string, unknown> = {};
  const end = eachMember(text, start, (name, valueStart) => {
    if (name === 'data' && text.charCodeAt(valueStart) === 0x5b) {
      const { rows, end: valueEnd } = readRowArray(text, valueStart, fields);
      envelope.data = rows;
      return valueEnd;
    }
    if (name !== 'ok' && name !== 'data') return undefined;
    const valueEnd = skipValue(text, valueStart);
    envelope[name] = JSON.parse(text.slice(valueStart, valueEnd));
    return valueEnd;
  });
  if (skipWhitespace(text, end) !== text.length) fail(text, skipWhitespace(text, end));
  return envelope;
}
