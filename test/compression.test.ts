import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { describe, expect, it, vi } from 'vitest';
import { createDemoUpstream } from '../src/demo/upstream.js';
import { createNodeBodyEncoder } from '../src/node/compression.js';
import type { BodyEncoder } from '../src/core/reads/rendered-json.js';
import type { SharedEntry } from '../src/core/reads/shared-tier.js';
import { TEST_API_KEY, createFakeClock, createMemoryStore, createScriptedFetch, createTestApp } from './helpers.js';
import { createArchive } from './support/fake-upstream/archive.js';
import { createFakeUpstream } from './support/fake-upstream/fake.js';

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
    const answers = await Promise.all(
      ['', 'br', 'gzip'].map((coding) => app.request(SLUG_PATH, { headers: coding ? { 'Accept-Encoding': coding } : {} })),
    );
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
    const headers = { 'Accept-Encoding': 'br, gzip' };
    const answer = await app.request(SLUG_PATH, { headers });
    // Asked again once its (empty) compressed copies are settled: a hit, then a 304, are alike.
    await new Promise((resolve) => setTimeout(resolve, 0));
    const hit = await app.request(SLUG_PATH, { headers });
    const revalidated = await app.request(SLUG_PATH, { headers: { ...headers, 'If-None-Match': answer.headers.get('etag')! } });
    expect([answer, hit, revalidated].map((one) => [one.status, one.headers.get('x-cache')])).toEqual([
      [200, 'MISS'],
      [200, 'HIT'],
      [304, 'HIT'],
    ]);
    for (const one of [answer, hit, revalidated]) {
      expect(one.headers.get('content-encoding')).toBeNull();
      expect(one.headers.get('vary') ?? '').not.toMatch(/Accept-Encoding/);
    }
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

describe('compressed copies of the archive feeds (Node)', () => {
  const SITE_ISSUE_URL = 'https://news.example.com/issues/{slug}/';

  it.each(['atom', 'rss'] as const)('keeps br and gzip copies of the %s feed, each with its own ETag, Vary and 304', async (format) => {
    const { app } = createTestApp({ encodeBody: createNodeBodyEncoder(), env: { SITE_ISSUE_URL } });
    const path = `/api/issues?format=${format}`;
    const text = await (await app.request(path)).text();
    const etags = new Set<string>();
    for (const coding of ['br', 'gzip'] as const) {
      const answer = await app.request(path, { headers: { 'Accept-Encoding': coding } });
      expect(answer.status).toBe(200);
      expect(answer.headers.get('content-encoding')).toBe(coding);
      expect(answer.headers.get('content-type')).toMatch(format === 'atom' ? /^application\/atom\+xml/ : /^application\/rss\+xml/);
      expect(answer.headers.get('vary')).toBe('Origin, Accept, Accept-Encoding');
      const bytes = Buffer.from(await answer.arrayBuffer());
      expect(bytes.length).toBeLessThan(Buffer.byteLength(text) * 0.9);
      expect(decode[coding](bytes).toString()).toBe(text);
      const etag = answer.headers.get('etag')!;
      etags.add(etag);
      const again = await app.request(path, { headers: { 'Accept-Encoding': coding, 'If-None-Match': etag } });
      expect(again.status).toBe(304);
      expect(again.headers.get('vary')).toBe('Origin, Accept, Accept-Encoding');
    }
    etags.add((await app.request(path)).headers.get('etag')!);
    expect(etags.size).toBe(3);
  });

  it('sends the feed as text, with no Vary on Accept-Encoding, where nothing is compressed (the Worker)', async () => {
    const { app } = createTestApp({ env: { SITE_ISSUE_URL } });
    const answer = await app.request('/api/issues?format=atom', { headers: { 'Accept-Encoding': 'br, gzip' } });
    expect(answer.headers.get('content-encoding')).toBeNull();
    expect(answer.headers.get('vary')).toBe('Origin, Accept');
  });
});

describe('compressed copies of a copy read back from the shared tier (Node with Redis)', () => {
  /** Lets the shared copy written behind an answer land (bounded: 50 turns). */
  async function written(entries: Map<string, SharedEntry>, key: string) {
    for (let turn = 0; turn < 50 && !entries.has(key); turn += 1) await new Promise((resolve) => setTimeout(resolve, 0));
    expect(entries.has(key)).toBe(true);
  }

  it('answers Accept-Encoding with a copy compressed once on the instance that read it from the tier, with no upstream call', async () => {
    const demo = createDemoUpstream({ apiKey: TEST_API_KEY });
    const upstream = createScriptedFetch((call) => demo.fetch(call.url, { method: call.method, headers: call.headers }));
    const { store, entries } = createMemoryStore();
    const instance = () =>
      createTestApp({
        fetch: upstream.fetch,
        env: { NEWSLETTER_API_BASE_URL: demo.baseUrl },
        encodeBody: createNodeBodyEncoder(),
        deps: { sharedCache: store },
      });
    const a = instance();
    const fromA = await a.app.request(SLUG_PATH, { headers: { 'Accept-Encoding': 'br' } });
    expect(fromA.headers.get('content-encoding')).toBe('br');
    await written(entries, `issue:${SLUG}`);
    for (const entry of entries.values()) expect(entry.payload).not.toMatch(/"encoded"/);

    const b = instance();
    const callsBefore = upstream.calls.length;
    const text = await (await a.app.request(SLUG_PATH)).text();
    let compressedBytes = 0;
    let etagCharacters = 0;
    for (const coding of ['br', 'gzip'] as const) {
      const fromB = await b.app.request(SLUG_PATH, { headers: { 'Accept-Encoding': coding } });
      expect(fromB.status).toBe(200);
      expect(fromB.headers.get('content-encoding')).toBe(coding);
      expect(fromB.headers.get('vary')).toMatch(/\bAccept-Encoding\b/);
      const body = Buffer.from(await fromB.arrayBuffer());
      compressedBytes += body.byteLength;
      etagCharacters += fromB.headers.get('etag')!.length;
      expect(decode[coding](body).toString()).toBe(text);
      const fromAAgain = await a.app.request(SLUG_PATH, { headers: { 'Accept-Encoding': coding } });
      // The same representation on both instances: the same strong ETag.
      expect(fromB.headers.get('etag')).toBe(fromAAgain.headers.get('etag'));
    }
    expect(upstream.calls.length).toBe(callsBefore);
    // The copies count in B's cache bytes (B holds this one issue; A the archive index it read
    // for the issue's neighbours, and the letters that came with it, too): the body's UTF-8 bytes
    // (its text is not kept beside them) and each compressed copy, each with its ETag.
    const identityEtag = (await b.app.request(SLUG_PATH)).headers.get('etag')!;
    expect(b.stats().bytes).toBe(Buffer.byteLength(text) + 2 * identityEtag.length + compressedBytes + 2 * etagCharacters);
  });
});

describe('letters an archive read brings along (Node)', () => {
  /**
   * The app over a publication whose list rows carry their letters, with an encoder that holds
   * every letter (not the archive's own pages) until `open()`.
   */
  function gatedLetters() {
    const clock = createFakeClock(Date.UTC(2026, 1, 1));
    const fake = createFakeUpstream({
      apiKey: TEST_API_KEY,
      baseUrl: 'https://newsletter.test/v1',
      publication: createArchive({ issues: 30, contentBytes: 20_000 }),
      variant: {},
      now: clock.now,
    });
    const encoder = createNodeBodyEncoder();
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    let lettersWaiting = 0;
    const encodeBody: BodyEncoder = async (body) => {
      if (body.includes('"contentHtml"')) {
        lettersWaiting += 1;
        await gate;
      }
      return encoder(body);
    };
    const test = createTestApp({
      fetch: (input, init) => fake.fetch(new Request(input, init)),
      clock,
      env: { NEWSLETTER_API_BASE_URL: fake.baseUrl },
      encodeBody,
    });
    return { ...test, fake, open, lettersWaiting: () => lettersWaiting };
  }

  const brotli = { headers: { 'Accept-Encoding': 'br' } };

  /** The first issue the archive lists, read as text before any letter is compressed. */
  async function firstListed(app: ReturnType<typeof gatedLetters>['app']) {
    const list = await app.request('/api/issues?limit=3');
    expect(list.status).toBe(200);
    const slug = ((await list.json()) as { data: { slug: string }[] }).data[0]!.slug;
    const text = await app.request(`/api/issues/${slug}`, brotli);
    expect(text.status).toBe(200);
    expect(text.headers.get('content-encoding')).toBeNull();
    expect(text.headers.get('vary') ?? '').not.toMatch(/Accept-Encoding/);
    return { slug, path: `/api/issues/${slug}`, etag: text.headers.get('etag')!, body: await text.text() };
  }

  /** Reads `path` until it is answered in `br` (bounded by vi.waitFor's timeout). */
  async function compressedAnswer(app: ReturnType<typeof gatedLetters>['app'], path: string) {
    return vi.waitFor(
      async () => {
        const answer = await app.request(path, brotli);
        expect(answer.headers.get('content-encoding')).toBe('br');
        return answer;
      },
      { timeout: 10_000, interval: 20 },
    );
  }

  it('answers the archive without waiting on compressing its letters, and compresses them behind it', async () => {
    const { app, fake, open, lettersWaiting } = gatedLetters();
    // The archive answered while its letters wait: kept as text meanwhile, answered whole.
    const letter = await firstListed(app);
    expect(lettersWaiting()).toBeGreaterThan(0);

    open();
    const compressed = await compressedAnswer(app, letter.path);
    expect(compressed.headers.get('etag')).toBe(letter.etag.replace(/"$/, '-br"'));
    expect(compressed.headers.get('vary')).toMatch(/\bAccept-Encoding\b/);
    expect(compressed.headers.get('x-cache')).toBe('HIT');
    expect(decode.br(Buffer.from(await compressed.arrayBuffer())).toString()).toBe(letter.body);
    expect(fake.slugCalls(letter.slug)).toBe(0);
  });

  it('gives a letter that went stale before its turn its copies at its next refresh, with no read by slug', async () => {
    const { app, clock, fake, open } = gatedLetters();
    const letter = await firstListed(app);
    clock.advance(60_001); // past CACHE_TTL_SECONDS: the copy queued is no longer the fresh one
    open();
    const compressed = await compressedAnswer(app, letter.path);
    expect(compressed.headers.get('etag')).toBe(letter.etag.replace(/"$/, '-br"'));
    expect(decode.br(Buffer.from(await compressed.arrayBuffer())).toString()).toBe(letter.body);
    expect(fake.slugCalls(letter.slug)).toBe(0);
  });
});
