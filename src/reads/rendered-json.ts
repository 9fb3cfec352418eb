/** A success envelope serialized once, with its strong ETag: a cache hit only copies bytes. */
export interface RenderedJson {
  body: string;
  etag: string;
}

/** Serializes an envelope and computes its ETag, once per cached value, never per request. */
export async function renderJson(envelope: unknown): Promise<RenderedJson> {
  const body = JSON.stringify(envelope);
  return { body, etag: await strongEtag(body) };
}

/** A strong ETag (RFC 9110 §8.8.3) of a body: 144 bits of its SHA-256, base64url. */
export async function strongEtag(body: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(body));
  let binary = '';
  for (const byte of new Uint8Array(digest).subarray(0, 18)) binary += String.fromCharCode(byte);
  return `"${btoa(binary).replace(/\+/g, '-').replace(/\//g, '_')}"`;
}
