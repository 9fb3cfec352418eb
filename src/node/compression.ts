import { promisify } from 'node:util';
import { brotliCompress, constants, gzip } from 'node:zlib';
import type { BodyEncoder } from '../core/reads/rendered-json.js';

const brotli = promisify(brotliCompress);
const gzipAsync = promisify(gzip);

/** `br` and `gzip` copies of a cached body, made once per copy off the main thread; kept when a tenth smaller (docs/node-http.md). */
export function createNodeBodyEncoder({ minBytes = 1024 } = {}): BodyEncoder {
  return async function encodeBody(body) {
    const text = Buffer.from(body);
    if (text.length < minBytes) return [];
    const { BROTLI_PARAM_MODE, BROTLI_MODE_TEXT, BROTLI_PARAM_QUALITY, BROTLI_PARAM_SIZE_HINT } = constants;
    const params = { [BROTLI_PARAM_MODE]: BROTLI_MODE_TEXT, [BROTLI_PARAM_QUALITY]: 9, [BROTLI_PARAM_SIZE_HINT]: text.length };
    const [br, gz] = await Promise.all([brotli(text, { params }), gzipAsync(text, { level: 9 })]);
    return [
      { coding: 'br' as const, body: br },
      { coding: 'gzip' as const, body: gz },
    ].filter((copy) => copy.body.length <= text.length * 0.9);
  };
}
