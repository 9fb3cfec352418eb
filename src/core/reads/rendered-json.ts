/** The content codings a cached body may be kept in besides its own bytes (RFC 9110 §8.4.1). */
export type ContentCoding = 'br' | 'gzip';

/** A cached body in one content coding, with that representation's own strong ETag. */
export interface EncodedCopy {
  coding: ContentCoding;
  body: Uint8Array<ArrayBuffer>;
  etag: string;
}

/** A success envelope serialized once, with its strong ETag: a cache hit only copies bytes. */
export interface RenderedJson {
  /** The body as UTF-8, encoded once: a hit hands the socket these, not a string to convert again. */
  readonly bytes: Uint8Array<ArrayBuffer>;
  /**
   * The body as text, decoded when asked: by the encoder, a shared tier's entry, an issue page made
   * again with other neighbours. Not kept beside the bytes, which would hold every copy twice.
   */
  readonly body: string;
  readonly etag: string;
  /** The body compressed once per copy, best first; none where nothing is compressed (Workers) or it does not pay. */
  readonly encoded?: readonly EncodedCopy[];
}

/** A rendered copy of `bytes` (see RenderedJson): its text is decoded from them when asked. */
function renderedOf(bytes: Uint8Array<ArrayBuffer>, etag: string, encoded?: readonly EncodedCopy[]): RenderedJson {
  return {
    bytes,
    etag,
    ...(encoded !== undefined && { encoded }),
    get body() {
      return new TextDecoder().decode(bytes);
    },
  };
}

/**
 * Compresses a body once, when its copy is made: the codings worth keeping, best first (an
 * empty list when the body is too small to gain). Node's entry gives one (node/compression.ts).
 */
export type BodyEncoder = (body: string) => Promise<{ coding: ContentCoding; body: Uint8Array<ArrayBuffer> }[]>;

/** Serializes an envelope and computes its ETag (and its compressed copies), once per cached value, never per request. */
export function renderJson(envelope: unknown, encode?: BodyEncoder): Promise<RenderedJson> {
  return renderBody(JSON.stringify(envelope), encode);
}

/** `renderJson` for a body already written (a feed's XML). */
export async function renderBody(body: string, encode?: BodyEncoder): Promise<RenderedJson> {
  const bytes = new TextEncoder().encode(body);
  return withEncodedCopies(renderedOf(bytes, await strongEtag(bytes)), encode);
}

/** A body rendered before, with the ETag it was given (a copy read back from a shared tier). */
export function renderedWithEtag(body: string, etag: string): RenderedJson {
  return renderedOf(new TextEncoder().encode(body), etag);
}

/**
 * Bodies the encoder has been given: one it kept no copy of (too small, or not shrinking enough)
 * is not given to it again.
 */
const encodedOnce = new WeakSet<RenderedJson>();

/**
 * A rendered body with its compressed copies, made now where it has none and `encode` is given
 * (a copy read back from a shared tier holds its text only).
 */
export async function withEncodedCopies(rendered: RenderedJson, encode?: BodyEncoder): Promise<RenderedJson> {
  if (encode === undefined || rendered.encoded !== undefined || encodedOnce.has(rendered)) return rendered;
  const encoded = (await encode(rendered.body)).map((copy) => ({ ...copy, etag: codingEtag(rendered.etag, copy.coding) }));
  const withCopies = encoded.length === 0 ? rendered : renderedOf(rendered.bytes, rendered.etag, encoded);
  encodedOnce.add(withCopies);
  return withCopies;
}

/**
 * A compressed copy is another representation, so it carries another strong ETag (RFC 9110
 * §8.8.3): the identity's with the coding appended.
 */
function codingEtag(etag: string, coding: ContentCoding): string {
  return `${etag.slice(0, -1)}-${coding}"`;
}

/** Bytes a rendered copy holds in memory: its bytes and every compressed copy (CACHE_MAX_BYTES counts them all). */
export function renderedBytes(rendered: RenderedJson): number {
  let bytes = rendered.bytes.byteLength + rendered.etag.length * 2;
  for (const copy of rendered.encoded ?? []) bytes += copy.body.byteLength + copy.etag.length * 2;
  return bytes;
}

/** A strong ETag (RFC 9110 §8.8.3) of a body (text, or its UTF-8 bytes): 144 bits of its SHA-256, base64url. */
export async function strongEtag(body: string | Uint8Array<ArrayBuffer>): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', typeof body === 'string' ? new TextEncoder().encode(body) : body);
  let binary = '';
  for (const byte of new Uint8Array(digest).subarray(0, 18)) binary += String.fromCharCode(byte);
  return `"${btoa(binary).replace(/\+/g, '-').replace(/\//g, '_')}"`;
}
