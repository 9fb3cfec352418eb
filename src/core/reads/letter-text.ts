// The words of a letter as search and reading time count them (docs/contract.md "Search"); linear in the HTML's length.

const WORDS_PER_MINUTE = 230;
/** Longer runs are link targets, encoded images or ids: cut, they cannot bloat the index (search matches word starts). */
export const MAX_WORD_LENGTH = 40;

const SKIPPED = new Set(['script', 'style', 'head', 'template', 'noscript', 'svg', 'math', 'iframe', 'object']);
/** Elements inside a word's run (`<b>wo</b>rd` is one word); every other tag separates words. */
const INLINE = new Set(
  'a abbr b bdi bdo cite code data del dfn em font i ins kbd mark q s samp small span strike strong sub sup time tt u var'.split(' '),
);

const ENTITIES: Readonly<Record<string, string>> = Object.fromEntries(
  [
    `amp=&,lt=<,gt=>,quot=",apos=',nbsp= ,shy=,zwj=,zwnj=,rsquo=’,lsquo=‘,rdquo=”,ldquo=“,sbquo=‚,bdquo=„,mdash=—,ndash=–,hellip=…,middot=·`,
    `bull=•,laquo=«,raquo=»,copy=©,reg=®,trade=™,deg=°,euro=€,pound=£,szlig=ss,aelig=ae,AElig=AE,oelig=oe,OElig=OE,eth=d,ETH=D,thorn=th,THORN=TH`,
  ].flatMap((list) => list.split(',').map((pair) => pair.split('='))),
);
const ACCENTED_ENTITY = /^([A-Za-z])(acute|grave|circ|uml|tilde|cedil|ring|slash|caron)$/;

export function visibleText(html: string): string {
  const parts: string[] = [];
  let at = 0;
  const length = html.length;
  while (at < length) {
    const open = html.indexOf('<', at);
    const end = open === -1 ? length : open;
    if (end > at) parts.push(decodeReferences(html.slice(at, end)));
    if (open === -1) break;
    if (html.startsWith('<!--', open)) {
      const close = html.indexOf('-->', open + 4);
      at = close === -1 ? length : close + 3;
      parts.push(' ');
      continue;
    }
    const close = html.indexOf('>', open + 1);
    if (close === -1) break;
    const name = tagName(html, open + 1);
    at = close + 1;
    if (name === undefined) {
      // `<` that opens no tag (`a < b`) is text; a letter after it would have made a name.
      const next = html.charCodeAt(open + 1);
      if (next !== 0x2f && next !== 0x21 && next !== 0x3f) {
        parts.push('<');
        at = open + 1;
      }
      continue;
    }
    if (html[open + 1] !== '/' && SKIPPED.has(name) && html[close - 1] !== '/') {
      // End tags are lower case almost always: upper case is looked for only then.
      const lowerEnd = html.indexOf(`</${name}`, at);
      const endTag = lowerEnd !== -1 ? lowerEnd : html.indexOf(`</${name.toUpperCase()}`, at);
      const after = endTag === -1 ? -1 : html.indexOf('>', endTag);
      at = after === -1 ? length : after + 1;
      parts.push(' ');
      continue;
    }
    if (!INLINE.has(name)) parts.push(' ');
  }
  return parts.join('');
}

function tagName(html: string, from: number): string | undefined {
  const start = html.charCodeAt(from) === 0x2f ? from + 1 : from;
  if (!isAsciiLetter(html.charCodeAt(start))) return undefined;
  let at = start + 1;
  while (at < html.length && (isAsciiLetter(html.charCodeAt(at)) || isDigit(html.charCodeAt(at)))) at += 1;
  return html.slice(start, at).toLowerCase();
}

const isAsciiLetter = (code: number) => (code >= 0x61 && code <= 0x7a) || (code >= 0x41 && code <= 0x5a);
const isDigit = (code: number) => code >= 0x30 && code <= 0x39;
const isApostrophe = (code: number) => code === 0x27 || code === 0x2019 || code === 0x2bc;
const lowerCode = (code: number) => (code >= 0x41 && code <= 0x5a ? code + 0x20 : code);

function decodeReferences(text: string): string {
  if (!text.includes('&')) return text;
  return text.replace(/&(#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});/g, (whole, name: string) => {
    if (name[0] === '#') {
      const code = name[1] === 'x' || name[1] === 'X' ? Number.parseInt(name.slice(2), 16) : Number.parseInt(name.slice(1), 10);
      return code > 0 && code <= 0x10ffff && (code < 0xd800 || code > 0xdfff) ? String.fromCodePoint(code) : ' ';
    }
    const named = ENTITIES[name];
    if (named !== undefined) return named;
    const accented = ACCENTED_ENTITY.exec(name);
    return accented ? accented[1]! : whole;
  });
}

const FOLDS: Readonly<Record<string, string>> = { ß: 'ss', æ: 'ae', œ: 'oe', ø: 'o', ł: 'l', đ: 'd', ð: 'd', þ: 'th', ı: 'i', ħ: 'h' };
const FOLDABLE = /[ßæœøłđðþıħ]/g;
const MARKS = /\p{M}+/gu;
const INNER_APOSTROPHE = /(?<=[\p{L}\p{N}])['’ʼ](?=[\p{L}\p{N}])/gu;
const WORD = /[\p{L}\p{N}]+/gu;

export function searchWords(text: string): string[] {
  const words: string[] = [];
  scanWords(text, (source, start, end, upper, apostrophe) => words.push(wordAt(source, start, end, upper, apostrophe)));
  return words;
}

/** A word as `source.slice(start, end)`, seen without making it; a folded word beyond ASCII comes as a `source` of its own. */
type WordSink = (source: string, start: number, end: number, upper: boolean, apostrophe: boolean) => void;

export function scanWords(text: string, sink: WordSink): void {
  let start = -1;
  // An apostrophe between two of its characters is dropped; a character beyond ASCII takes the Unicode path.
  let upper = false;
  let apostrophe = false;
  let foreign = false;
  const length = text.length;
  for (let at = 0; at <= length; at += 1) {
    const code = at < length ? text.charCodeAt(at) : 0x20;
    if (isWordCode(code)) {
      if (start < 0) start = at;
      if (code >= 0x80) foreign = true;
      else if (code <= 0x5a && code >= 0x41) upper = true;
      continue;
    }
    if (start >= 0 && isApostrophe(code) && at + 1 < length && isWordCode(text.charCodeAt(at + 1))) {
      apostrophe = true;
      continue;
    }
    if (start < 0) continue;
    if (foreign) foldedWords(text.slice(start, at), sink);
    else sink(text, start, at, upper, apostrophe);
    start = -1;
    upper = false;
    apostrophe = false;
    foreign = false;
  }
}

export function wordAt(text: string, start: number, end: number, upper: boolean, apostrophe: boolean): string {
  const run = text.slice(start, end);
  const word = (apostrophe ? run.replace(INNER_APOSTROPHE, '') : run).slice(0, MAX_WORD_LENGTH);
  return upper ? word.toLowerCase() : word;
}

const isWordCode = (code: number) => isAsciiLetter(code) || isDigit(code) || (code >= 0x80 && !isPunctuation(code) && !isApostrophe(code));

const isPunctuation = (code: number) =>
  code === 0xa0 || code === 0xab || code === 0xbb || code === 0xb7 || (code >= 0x2000 && code <= 0x206f) || code === 0x3000;

function foldedWords(run: string, sink: WordSink): void {
  const folded = run
    .normalize('NFKD')
    .replace(MARKS, '')
    .toLowerCase()
    .replace(FOLDABLE, (letter) => FOLDS[letter] ?? letter)
    .replace(INNER_APOSTROPHE, '');
  for (const word of folded.match(WORD) ?? []) sink(word, 0, word.length, false, false);
}

export const readingMinutesOf = (words: number) => Math.max(1, Math.round(words / WORDS_PER_MINUTE));

export function countWords(html: string): number {
  let count = 0;
  scanWords(visibleText(html), () => void (count += 1));
  return count;
}

export function hashOf(text: string, start: number, end: number): number {
  let hash = 0;
  for (let at = start; at < end; at += 1) hash = (Math.imul(hash, 31) + lowerCode(text.charCodeAt(at))) | 0;
  return hash;
}

export function spells(word: string, text: string, start: number, end: number): boolean {
  if (word.length !== end - start) return false;
  for (let i = 0; i < word.length; i += 1) if (word.charCodeAt(i) !== lowerCode(text.charCodeAt(start + i))) return false;
  return true;
}
