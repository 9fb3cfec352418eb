/**
 * The words of a letter, as search and reading time count them (docs/contract.md "GET /api/issues",
 * "Search"): the visible text of its HTML, folded so that case and accents do not matter.
 * Runtime-neutral and linear in the length of the HTML (no regular expression that can backtrack
 * over a letter).
 */

/** Reading speed of docs/contract.md: about 230 words a minute. */
export const WORDS_PER_MINUTE = 230;
/**
 * A word is kept (and a query word compared) to this many characters: longer runs are link
 * targets, encoded images or ids, and cutting them keeps one junk token from bloating the index.
 * A query word cut the same way still finds what it names, since search matches word starts.
 */
export const MAX_WORD_LENGTH = 40;

/** Elements whose content is not read as text. */
const SKIPPED = new Set(['script', 'style', 'head', 'template', 'noscript', 'svg', 'math', 'iframe', 'object']);
/** Elements inside a word's run (`<b>wo</b>rd` is one word); every other tag separates words. */
const INLINE = new Set([
  'a', 'abbr', 'b', 'bdi', 'bdo', 'cite', 'code', 'data', 'del', 'dfn', 'em', 'font', 'i', 'ins', 'kbd',
  'mark', 'q', 's', 'samp', 'small', 'span', 'strike', 'strong', 'sub', 'sup', 'time', 'tt', 'u', 'var',
]);

/** The named entities a letter uses for text; accented letters are spelled `&eacute;` and read as their base letter. */
const ENTITIES: Readonly<Record<string, string>> = {
  amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ', shy: '', zwj: '', zwnj: '',
  rsquo: '’', lsquo: '‘', rdquo: '”', ldquo: '“', sbquo: '‚', bdquo: '„', mdash: '—', ndash: '–', hellip: '…',
  middot: '·', bull: '•', laquo: '«', raquo: '»', copy: '©', reg: '®', trade: '™', deg: '°', euro: '€', pound: '£',
  szlig: 'ss', aelig: 'ae', AElig: 'AE', oelig: 'oe', OElig: 'OE', eth: 'd', ETH: 'D', thorn: 'th', THORN: 'TH',
};
/** `&eacute;`, `&Uuml;`, `&ccedil;`, `&oslash;`…: the letter before the mark's name. */
const ACCENTED_ENTITY = /^([A-Za-z])(acute|grave|circ|uml|tilde|cedil|ring|slash|caron)$/;

/**
 * The visible text of an HTML letter: tags dropped (a space for those that separate words),
 * comments and the content of script, style and head dropped, character references decoded.
 */
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
      // `<` that opens no tag (`a < b`) is text.
      if (!/[/!?A-Za-z]/.test(html[open + 1] ?? '')) {
        parts.push('<');
        at = open + 1;
      }
      continue;
    }
    const closing = html[open + 1] === '/';
    if (!closing && SKIPPED.has(name) && html[close - 1] !== '/') {
      // Everything up to the matching end tag is not text (unclosed: the rest of the letter).
      const endTag = indexOfIgnoringCase(html, `</${name}`, at);
      const after = endTag === -1 ? -1 : html.indexOf('>', endTag);
      at = after === -1 ? length : after + 1;
      parts.push(' ');
      continue;
    }
    if (!INLINE.has(name)) parts.push(' ');
  }
  return parts.join('');
}

/** The lower-case name of the tag whose `<` is just before `from`, or undefined for `<!doctype`, `<?` and text. */
function tagName(html: string, from: number): string | undefined {
  let at = html[from] === '/' ? from + 1 : from;
  const start = at;
  while (at < html.length && /[A-Za-z0-9]/.test(html[at]!)) at += 1;
  if (at === start || !/[A-Za-z]/.test(html[start]!)) return undefined;
  return html.slice(start, at).toLowerCase();
}

function indexOfIgnoringCase(html: string, needle: string, from: number): number {
  // End tags are written in lower case almost always; upper case is looked for only then.
  const lower = html.indexOf(needle, from);
  if (lower !== -1) return lower;
  return html.indexOf(needle.toUpperCase(), from);
}

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

/** Letters that do not decompose into a base letter and a mark (NFKD leaves them whole). */
const FOLDS: Readonly<Record<string, string>> = { ß: 'ss', æ: 'ae', œ: 'oe', ø: 'o', ł: 'l', đ: 'd', ð: 'd', þ: 'th', ı: 'i', ħ: 'h' };
const FOLDABLE = /[ßæœøłđðþıħ]/g;
const MARKS = /\p{M}+/gu;
/** An apostrophe inside a word is part of it: `year's` is searched as `years`, `don't` as `dont`. */
const INNER_APOSTROPHE = /(?<=[\p{L}\p{N}])['’ʼ](?=[\p{L}\p{N}])/gu;
const WORD = /[\p{L}\p{N}]+/gu;

/**
 * The words of a text as search compares them: compatibility-decomposed with the marks removed
 * (`Café` → `cafe`, `ﬁ` → `fi`), lower case, a few letters folded (`ß` → `ss`), split on
 * anything that is not a letter or a digit, each cut to MAX_WORD_LENGTH. In text order, repeats kept.
 */
export function searchWords(text: string): string[] {
  const folded = text
    .normalize('NFKD')
    .replace(MARKS, '')
    .toLowerCase()
    .replace(FOLDABLE, (letter) => FOLDS[letter] ?? letter)
    .replace(INNER_APOSTROPHE, '');
  const words = folded.match(WORD) ?? [];
  for (let i = 0; i < words.length; i += 1) {
    if (words[i]!.length > MAX_WORD_LENGTH) words[i] = words[i]!.slice(0, MAX_WORD_LENGTH);
  }
  return words;
}

/** Minutes to read `words` words at WORDS_PER_MINUTE, rounded, at least 1. */
export function readingMinutesOf(words: number): number {
  return Math.max(1, Math.round(words / WORDS_PER_MINUTE));
}

/** A letter's words and reading time, from its HTML. */
export function letterWords(html: string): { words: string[]; minutes: number } {
  const words = searchWords(visibleText(html));
  return { words, minutes: readingMinutesOf(words.length) };
}
