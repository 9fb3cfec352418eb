/**
 * Text for XML documents. Every string that reaches a feed passes through `xmlText`, so a
 * subject holding `<`, `&`, `]]>` or a control character cannot change the document's shape.
 */

// XML 1.0 §2.2 Char: tab, LF, CR, U+0020–U+D7FF, U+E000–U+FFFD and the astral planes. Anything
// else (C0 controls, lone surrogates, U+FFFE/U+FFFF) makes the whole document ill-formed, and
// an escape does not help (`&#1;` is forbidden too), so it is dropped.
const FORBIDDEN_XML_CHARS = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu;

const ENTITIES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&apos;',
};

/** Escapes text for XML content or a quoted attribute value, dropping characters XML 1.0 forbids. */
export function xmlText(value: string): string {
  return value.replace(FORBIDDEN_XML_CHARS, '').replace(/[&<>"']/g, (char) => ENTITIES[char]!);
}

/** `<name attr="…">text</name>` with the text and every attribute value escaped. */
export function xmlElement(name: string, text: string, attributes: Readonly<Record<string, string>> = {}): string {
  return `<${name}${xmlAttributes(attributes)}>${xmlText(text)}</${name}>`;
}

/** ` a="…" b="…"` in the order given (insertion order, so the output is deterministic). */
export function xmlAttributes(attributes: Readonly<Record<string, string>>): string {
  return Object.entries(attributes)
    .map(([name, value]) => ` ${name}="${xmlText(value)}"`)
    .join('');
}
