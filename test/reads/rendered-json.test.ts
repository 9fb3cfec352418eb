import { describe, expect, it } from 'vitest';
import { renderJson, strongEtag } from '../../src/reads/rendered-json.js';

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
});
