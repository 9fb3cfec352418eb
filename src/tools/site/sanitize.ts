import sanitizeHtml from 'sanitize-html';

// Shown on the site's own origin: structure, links and images only; no `style`, which could lay a fake form over the page.
const LETTER_POLICY: sanitizeHtml.IOptions = {
  allowedTags: [
    ...'h1 h2 h3 h4 h5 h6 p br hr blockquote pre code ul ol li dl dt dd a img figure figcaption'.split(' '),
    ...'strong b em i u s small sub sup mark abbr cite q span table thead tbody tfoot tr th td caption'.split(' '),
  ],
  allowedAttributes: {
    // rel/target/loading/decoding are set by transformTags, over what the letter said.
    a: ['href', 'title', 'rel', 'target'],
    img: ['src', 'alt', 'title', 'width', 'height', 'loading', 'decoding'],
    abbr: ['title'],
    th: ['colspan', 'rowspan', 'scope'],
    td: ['colspan', 'rowspan'],
    ol: ['start'],
  },
  allowedSchemes: ['http', 'https', 'mailto'],
  allowedSchemesByTag: { img: ['http', 'https'] },
  allowProtocolRelative: false,
  nonTextTags: ['script', 'style', 'textarea', 'option', 'noscript', 'title', 'head', 'template', 'svg', 'math'],
  transformTags: {
    // Off the site: a new tab that cannot reach back (window.opener) nor learn the page.
    a: (tagName, attribs) => ({ tagName, attribs: { ...absoluteOnly(attribs, 'href'), rel: 'noopener noreferrer', target: '_blank' } }),
    img: (tagName, attribs) => ({ tagName, attribs: { ...absoluteOnly(attribs, 'src'), loading: 'lazy', decoding: 'async' } }),
  },
  exclusiveFilter: (frame) => frame.tag === 'img' && !frame.attribs.src,
};

// An email's relative link means nothing on the site; the scheme is allowedSchemes' job.
function absoluteOnly(attribs: sanitizeHtml.Attributes, name: string): sanitizeHtml.Attributes {
  const { [name]: value, ...rest } = attribs;
  return value !== undefined && /^[a-z][a-z0-9+.-]*:/i.test(value.trim()) ? { ...rest, [name]: value } : rest;
}

export const sanitizeLetter = (html: string): string => sanitizeHtml(html, LETTER_POLICY).trim();

// The only entities sanitize-html writes into text; decoded in one pass, so `&amp;lt;` stays `&lt;`.
const TEXT_ENTITIES: Readonly<Record<string, string>> = { amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'" };

export function letterText(html: string): string {
  return sanitizeHtml(html, { allowedTags: [], allowedAttributes: {}, nonTextTags: LETTER_POLICY.nonTextTags })
    .replace(/&(amp|lt|gt|quot|#39);/g, (_, name: string) => TEXT_ENTITIES[name]!)
    .replace(/\s+/g, ' ')
    .trim();
}

/** Drops a leading `<h1>` that repeats the subject; sanitised HTML is regular enough for this one pattern. */
export function withoutLeadingTitle(sanitized: string, subject: string): string {
  const match = /^<h1>([\s\S]*?)<\/h1>\s*/.exec(sanitized);
  if (!match) return sanitized;
  const normal = (text: string) => text.replace(/\s+/g, ' ').trim().toLowerCase();
  return normal(letterText(match[1]!)) === normal(subject) ? sanitized.slice(match[0].length) : sanitized;
}
