import { promisify } from 'node:util';
import { brotliCompress, constants, gzip } from 'node:zlib';
import type { BodyEncoder, ContentCoding } from '../core/reads/rendered-json.js';

const brotli = promisify(brotliCompress);
const gzipAsync = promisify(gzip);

export interface NodeBodyEncoderOptions {
  /** Shorter bodies are kept as text only. */
  minBytes?: number;
}

/**
 * `br` and `gzip` copies of a cached body, made once per copy on libuv's thread pool, never on a
 * request; kept only when a tenth smaller. Levels and the threshold: docs/node-http.md.
 */
export function createNodeBodyEncoder(options: NodeBodyEncoderOptions = {}): BodyEncoder {
  const { minBytes = DEFAULT_MIN_BYTES } = options;
  return async function encodeBody(body) {
    const text = Buffer.from(body);
    if (text.length < minBytes) return [];
    const [br, gz] = await Promise.all([
      brotli(text, {
        params: {
          [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
          [constants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY,
          [constants.BROTLI_PARAM_SIZE_HINT]: text.length,
        },
      }),
      gzipAsync(text, { level: GZIP_LEVEL }),
    ]);
    const copies: { coding: ContentCoding; body: Uint8Array<ArrayBuffer> }[] = [];
    for (const [coding, copy] of [
      ['br', br],
      ['gzip', gz],
    ] as const) {
      // zlib's output is never backed by a SharedArrayBuffer.
      if (copy.length <= text.length * 0.9) copies.push({ coding, body: copy as Uint8Array<ArrayBuffer> });
    }
    return copies;
  };
}

const DEFAULT_MIN_BYTES = 1024;
const BROTLI_QUALITY = 9;
const GZIP_LEVEL = 9;
