import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { createNodeBodyEncoder } from '../src/node-compression.js';
import { createTestApp } from './helpers.js';

const SLUG = 'meet-the-rooftop-beekeepers-of-eastside';
const SLUG_PATH = `/api/issues/${SLUG}`;

function compressingApp() {
  return createTestApp({ encodeBody: createNodeBodyEncoder() });
}

const decode = { br: brotliDecompressSync, gzip: gunzipSync } as const;

describe('compressed copies of cached replies (Node)', () => {
  it.each(['br', 'gzip'] as const)('answers Accept-Encoding: %s with that copy, which decodes to the body as it is', async (coding) => {
    const { app } = compressingApp();
    const plain = await app.request(SLUG_PATH);
    const text = await plain.text();
    const encoded = await app.request(SLUG_PATH, { headers: { 'Accept-Encoding': coding } });
    expect(encoded.status).toBe(200);
    expect(encoded.headers.get('content-encoding')).toBe(coding);
    const bytes = Buffer.from(await encoded.arrayBuffer());
    expect(bytes.length).toBeLessThan(Buffer.byteLength(text) * 0.9);
    expect(decode[coding](bytes).toString()).toBe(text);
  });

  it('says Vary: Accept-Encoding on every answer of a copy kept compressed, and gives each coding its own strong ETag', async () => {
    const { app } = compressingApp();
    const answers = await Promise.all(['', 'br', 'gzip'].map((coding) => app.request(SLUG_PATH, { headers: coding ? { 'Accept-Encoding': coding } : {} })));
    for (const answer of answers) expect(answer.headers.get('vary')).toMatch(/\bAccept-Encoding\b/);
    const [identity, br, gzip] = answers.map((answer) => answer.headers.get('etag')!);
    expect(new Set([identity, br, gzip]).size).toBe(3);
    for (const etag of [identity, br, gzip]) expect(etag).toMatch(/^"[^"]+"$/);
    expect(answers[0]!.headers.get('content-encoding')).toBeNull();
  });

  it.each([
    ['br', 'br'],
    ['gzip', 'gzip'],
    ['', undefined],
  ] as const)('answers 304 to If-None-Match naming the %s copy, accepting it', async (accept, coding) => {
    const { app } = compressingApp();
    const headers: Record<string, string> = accept ? { 'Accept-Encoding': accept } : {};
    const first = await app.request(SLUG_PATH, { headers });
    expect(first.headers.get('content-encoding') ?? undefined).toBe(coding);
    const etag = first.headers.get('etag')!;
    const again = await app.request(SLUG_PATH, { headers: { ...headers, 'If-None-Match': etag } });
    expect(again.status).toBe(304);
    expect(again.headers.get('etag')).toBe(etag);
    expect(again.headers.get('vary')).toMatch(/\bAccept-Encoding\b/);
    expect(await again.text()).toBe('');
  });

  it('answers 200 in the coding asked for when If-None-Match names another coding’s ETag', async () => {
    const { app } = compressingApp();
    const identityEtag = (await app.request(SLUG_PATH)).headers.get('etag')!;
    const br = await app.request(SLUG_PATH, { headers: { 'Accept-Encoding': 'br', 'If-None-Match': identityEtag } });
    expect(br.status).toBe(200);
    expect(br.headers.get('content-encoding')).toBe('br');
  });

  it('keeps a body under the threshold as text only: no coding, no Vary on Accept-Encoding', async () => {
    const { app } = createTestApp({ encodeBody: createNodeBodyEncoder({ minBytes: 1_000_000 }) });
    const answer = await app.request(SLUG_PATH, { headers: { 'Accept-Encoding': 'br, gzip' } });
    expect(answer.headers.get('content-encoding')).toBeNull();
    expect(answer.headers.get('vary') ?? '').not.toMatch(/Accept-Encoding/);
  });

  it('counts the compressed copies in the cache bytes (CACHE_MAX_BYTES)', async () => {
    const plain = createTestApp();
    const compressing = compressingApp();
    for (const { app } of [plain, compressing]) {
      await app.request(SLUG_PATH);
      await app.request('/api/issues');
    }
    const bytes = (stats: Record<string, number | undefined>) => (stats.bytes ?? 0) + (stats.renderedPageBytes ?? 0);
    expect(bytes(compressing.stats())).toBeGreaterThan(bytes(plain.stats()));
  });

  it('compresses the archive pages too', async () => {
    const { app } = compressingApp();
    const answer = await app.request('/api/issues', { headers: { 'Accept-Encoding': 'gzip' } });
    expect(answer.headers.get('content-encoding')).toBe('gzip');
    expect(answer.headers.get('vary')).toMatch(/^Origin, Accept, Accept-Encoding$|Accept, Accept-Encoding/);
    expect(JSON.parse(gunzipSync(Buffer.from(await answer.arrayBuffer())).toString())).toMatchObject({ ok: true });
  });
});
