export type EncodedCopy = { coding: 'br' | 'gzip'; body: Uint8Array<ArrayBuffer>; etag: string };

/** Serialized once, with its strong ETag and compressed copies (best first): a cache hit only copies bytes. */
export interface RenderedJson {
  readonly bytes: Uint8Array<ArrayBuffer>;
  /** Decoded when asked: kept beside the bytes, it would hold every copy twice. */
  readonly body: string;
  readonly etag: string;
  readonly encoded?: readonly EncodedCopy[];
}

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

export type BodyEncoder = (body: string) => Promise<Omit<EncodedCopy, 'etag'>[]>;

export const renderJson = (envelope: unknown, encode?: BodyEncoder) => renderBody(JSON.stringify(envelope), encode);

// A Buffer where there is one: Node wraps any other Uint8Array in one on every write (docs/performance.md).
const bytesOf = (text: string, bytes = new TextEncoder().encode(text)) =>
  typeof Buffer === 'undefined' ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);

export async function renderBody(body: string, encode?: BodyEncoder): Promise<RenderedJson> {
  const bytes = bytesOf(body);
  return withEncodedCopies(renderedOf(bytes, await strongEtag(bytes)), encode);
}

export const renderedWithEtag = (body: string, etag: string) => renderedOf(bytesOf(body), etag);

/** `encoded` set, even empty (a body the encoder kept no copy of): not given to the encoder again. */
export async function withEncodedCopies(rendered: RenderedJson, encode?: BodyEncoder): Promise<RenderedJson> {
  if (encode === undefined || rendered.encoded !== undefined) return rendered;
  // Another representation, another strong ETag (RFC 9110 §8.8.3).
  const encoded = (await encode(rendered.body)).map((copy) => ({ ...copy, etag: `${rendered.etag.slice(0, -1)}-${copy.coding}"` }));
  return renderedOf(rendered.bytes, rendered.etag, encoded);
}

export function renderedBytes(rendered: RenderedJson): number {
  let bytes = rendered.bytes.byteLength + rendered.etag.length * 2;
  for (const copy of rendered.encoded ?? []) bytes += copy.body.byteLength + copy.etag.length * 2;
  return bytes;
}

export async function strongEtag(body: string | Uint8Array<ArrayBuffer>): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', typeof body === 'string' ? new TextEncoder().encode(body) : body);
  const binary = String.fromCharCode(...new Uint8Array(digest, 0, 18));
  return `"${btoa(binary).replace(/\+/g, '-').replace(/\//g, '_')}"`;
}
