/*
 * Reads a List Issues page keeping only the row members we read: JSON.parse would build every member
 * (the editor state too, often as large as the letter) only for the schema to strip it. Skipped members
 * are still checked as JSON (docs/dependencies.md says why not a streaming package).
 */

/** Sticky patterns (RFC 8259): each is tried exactly at `lastIndex`. */
const WHITESPACE = /[ \t\n\r]*/y;
const PLAIN_CHARACTERS = /[^"\\\u0000-\u001f]*/y;
const ESCAPE = /["\\/bfnrt]|u[0-9A-Fa-f]{4}/y;
const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
const LITERAL = /true|false|null/y;

function fail(text: string, at: number): never {
  throw new SyntaxError(at >= text.length ? 'Unexpected end of JSON input' : `Unexpected token in JSON at position ${at}`);
}

function after(pattern: RegExp, text: string, at: number): number {
  pattern.lastIndex = at;
  return pattern.test(text) ? pattern.lastIndex : at;
}

const skipWhitespace = (text: string, at: number) => after(WHITESPACE, text, at);

function skipString(text: string, at: number): number {
  if (text.charCodeAt(at) !== 0x22) fail(text, at);
  let index = at + 1;
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

function skipName(text: string, at: number): number {
  const colon = skipWhitespace(text, skipString(text, skipWhitespace(text, at)));
  if (text.charCodeAt(colon) !== 0x3a) fail(text, colon);
  return colon + 1;
}

/** The end of the JSON value at `at`, checked but not built; a stack, not recursion, so no nesting overflows. */
export function skipValue(text: string, at: number): number {
  /** The closing character of each object or array still open. */
  const open: number[] = [];
  let index = at;
  for (;;) {
    index = skipWhitespace(text, index);
    const code = text.charCodeAt(index);
    if (code === 0x7b || code === 0x5b) {
      const inside = skipWhitespace(text, index + 1);
      const close = code === 0x7b ? 0x7d : 0x5d;
      if (text.charCodeAt(inside) !== close) {
        open.push(close);
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
      const close = open[open.length - 1];
      if (next === 0x2c) {
        index = close === 0x7d ? skipName(text, index + 1) : index + 1;
        break;
      }
      if (next !== close) fail(text, index);
      open.pop();
      index += 1;
    }
  }
}

/** Walks the object or array whose `{` or `[` is at `at`: `read` returns where each member's value (or element) ends. */
function eachItem(text: string, at: number, read: (start: number, name: string | undefined) => number): number {
  const close = text.charCodeAt(at) === 0x7b ? 0x7d : 0x5d;
  let index = skipWhitespace(text, at + 1);
  if (text.charCodeAt(index) === close) return index + 1;
  for (;;) {
    let name: string | undefined;
    if (close === 0x7d) {
      const nameStart = skipWhitespace(text, index);
      name = JSON.parse(text.slice(nameStart, skipString(text, nameStart))) as string;
      index = skipName(text, nameStart);
    }
    index = skipWhitespace(text, read(skipWhitespace(text, index), name));
    const next = text.charCodeAt(index);
    if (next === close) return index + 1;
    if (next !== 0x2c) fail(text, index);
    index += 1;
  }
}

/** Parses the value at `start` from its own text (a copy, never a slice of the page), and says where it ends. */
function parseValue(text: string, start: number, into: Record<string, unknown>, name: string): number {
  const end = skipValue(text, start);
  into[name] = JSON.parse(text.slice(start, end));
  return end;
}

/** One row with only the members in `fields`; anything but an object is `null` (dropped later). */
function readRow(text: string, start: number, fields: ReadonlySet<string>, rows: unknown[]): number {
  if (text.charCodeAt(start) !== 0x7b) {
    rows.push(null);
    return skipValue(text, start);
  }
  const row: Record<string, unknown> = {};
  rows.push(row);
  return eachItem(text, start, (valueStart, name = '') =>
    fields.has(name) ? parseValue(text, valueStart, row, name) : skipValue(text, valueStart),
  );
}

/** `{ ok, data: [...] }` as JSON.parse would read it, rows cut to `fields`; text that is not JSON throws a SyntaxError. */
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
  const end = eachItem(text, start, (valueStart, name = '') => {
    if (name === 'data' && text.charCodeAt(valueStart) === 0x5b) {
      const rows: unknown[] = [];
      envelope.data = rows;
      return eachItem(text, valueStart, (rowStart) => readRow(text, rowStart, fields, rows));
    }
    return name === 'ok' || name === 'data' ? parseValue(text, valueStart, envelope, name) : skipValue(text, valueStart);
  });
  if (skipWhitespace(text, end) !== text.length) fail(text, skipWhitespace(text, end));
  return envelope;
}
