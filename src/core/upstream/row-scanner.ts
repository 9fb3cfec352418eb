/* Keeps only the row members we read: JSON.parse would build the editor state too, for the schema to strip. Skipped members
 are still checked as JSON; kept values are parsed from their own text, so no slice keeps the page alive (docs/dependencies.md). */

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
  const closers: number[] = [];
  let index = at;
  for (;;) {
    index = skipWhitespace(text, index);
    const code = text.charCodeAt(index);
    if (code === 0x7b || code === 0x5b) {
      const inside = skipWhitespace(text, index + 1);
      const close = code === 0x7b ? 0x7d : 0x5d;
      if (text.charCodeAt(inside) !== close) {
        closers.push(close);
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
      if (closers.length === 0) return index;
      index = skipWhitespace(text, index);
      const next = text.charCodeAt(index);
      const close = closers[closers.length - 1];
      if (next === 0x2c) {
        index = close === 0x7d ? skipName(text, index + 1) : index + 1;
        break;
      }
      if (next !== close) fail(text, index);
      closers.pop();
      index += 1;
    }
  }
}

/** Walks the object at `at`: `take` returns where a value it read ends, else the value is skipped. Returns the object's end. */
function eachMember(text: string, at: number, take: (name: string, start: number) => number | undefined): number {
  let index = skipWhitespace(text, at);
  if (text.charCodeAt(index) !== 0x7b) fail(text, index);
  index = skipWhitespace(text, index + 1);
  if (text.charCodeAt(index) === 0x7d) return index + 1;
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

/** One row with only the members in `fields`; anything but an object is `null` (dropped later). */
function readRow(text: string, at: number, fields: ReadonlySet<string>): { row: unknown; end: number } {
  const start = skipWhitespace(text, at);
  if (text.charCodeAt(start) !== 0x7b) return { row: null, end: skipValue(text, start) };
  const row: Record<string, unknown> = {};
  const end = eachMember(text, start, (name, valueStart) => {
    if (!fields.has(name)) return undefined;
    const valueEnd = skipValue(text, valueStart);
    row[name] = JSON.parse(text.slice(valueStart, valueEnd));
    return valueEnd;
  });
  return { row, end };
}

function readRowArray(text: string, at: number, fields: ReadonlySet<string>): { rows: unknown[]; end: number } {
  const rows: unknown[] = [];
  let index = skipWhitespace(text, at + 1);
  if (text.charCodeAt(index) === 0x5d) return { rows, end: index + 1 };
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

/** `{ ok, data: [...] }` as JSON.parse would read it, rows cut to `fields`; text that is not JSON throws a SyntaxError. */
export function parseRowList(text: string, fields: ReadonlySet<string>): unknown {
  try {
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
  } finally {
    // V8 remembers the last text a pattern matched (RegExp.input): let go of the page's.
    after(WHITESPACE, '', 0);
  }
}
