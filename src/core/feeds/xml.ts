// Not an XML 1.0 Char (§2.2): such a character makes the document ill-formed even escaped, so it is dropped.
const FORBIDDEN_XML_CHARS = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu;
const ENTITIES: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' };

/** Every string that reaches a feed passes here: for content or a quoted attribute value. */
export function xmlText(value: string): string {
  return value.replace(FORBIDDEN_XML_CHARS, '').replace(/[&<>"']/g, (char) => ENTITIES[char]!);
}

/** `<name attr="…">text</name>`, everything escaped. */
export function xmlElement(name: string, text: string, attributes: Readonly<Record<string, string>> = {}): string {
  const attributeText = Object.entries(attributes).map(([key, value]) => ` ${key}="${xmlText(value)}"`);
  return `<${name}${attributeText.join('')}>${xmlText(text)}</${name}>`;
}
