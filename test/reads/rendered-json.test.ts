import { describe, expect, it, vi } from 'vitest';
import {
  renderBody,
  renderedWithEtag,
  renderJson,
  strongEtag,
  withEncodedCopies,
  type BodyEncoder,
} from '../../src/core/reads/rendered-json.js';

describe('strongEtag', () => {
  it('is a quoted strong validator that is stable for a body and differs between bodies', async () => {
    const etag = await strongEtag('{"ok":true}');
    expect(etag).toMatch(/^"[A-Za-z0-9_-]{24}"$/);
    expect(await strongEtag('{"ok":true}')).toBe(etag);
    expect(await strongEtag('{"ok":false}')).not.toBe(etag);
  });
});

describe('renderJson', () => {
  it('serializes an envelope once and tags it with the strong ETag of exactly that body', async () => {
    const rendered = await renderJson({ ok: true, data: [{ name: 'News', slug: 'news' }] });
    expect(rendered.body).toBe('{"ok":true,"data":[{"name":"News","slug":"news"}]}');
    expect(rendered.etag).toBe(await strongEtag(rendered.body));
  });

  it('keeps the bytes as a Buffer where the runtime has one (Node wraps any other Uint8Array on every write), else a Uint8Array', async () => {
    const text = '{"ok":true,"data":"é"}';
    const bytes = [...new TextEncoder().encode(text)];
    const rendered = [await renderJson({ ok: true, data: 'é' }), renderedWithEtag(text, '"e"')];
    for (const { bytes: kept } of rendered)
      expect([kept.constructor, [...kept]]).toEqual([typeof Buffer === 'undefined' ? Uint8Array : Buffer, bytes]);
    // Workers without nodejs_compat (the test pool adds it): no Buffer.
    vi.stubGlobal('Buffer', undefined);
    try {
      for (const { bytes: kept } of [await renderJson({ ok: true, data: 'é' }), renderedWithEtag(text, '"e"')])
        expect([kept.constructor, [...kept]]).toEqual([Uint8Array, bytes]);
    } finally {
      vi.unstubAllGlobals();
    }
  });
});

describe('withEncodedCopies', () => {
  it('gives a body to the encoder once: one it kept no copy of is not encoded again', async () => {
    const bodies: string[] = [];
    const keepsNothing: BodyEncoder = async (body) => {
      bodies.push(body);
      return [];
    };
    const rendered = await renderBody('short', keepsNothing);
    expect(rendered.encoded).toEqual([]);
    expect(await withEncodedCopies(rendered, keepsNothing)).toBe(rendered);
    expect(bodies).toEqual(['short']);
  });

  it('adds the copies to a body rendered without them, each with the ETag of its coding', async () => {
    const gzip: BodyEncoder = async () => [{ coding: 'gzip', body: new Uint8Array([1, 2, 3]) }];
    const text = await renderBody('long enough');
    const copied = await withEncodedCopies(text, gzip);
    expect(copied.body).toBe(text.body);
    expect(copied.encoded).toEqual([{ coding: 'gzip', body: new Uint8Array([1, 2, 3]), etag: `${text.etag.slice(0, -1)}-gzip"` }]);
    // Made once: asked again, the same object.
    expect(await withEncodedCopies(copied, gzip)).toBe(copied);
  });
});
