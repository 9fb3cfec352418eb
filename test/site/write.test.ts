import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { siteDigest, writeSite } from '../../src/tools/site/build.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'site-write-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const build = (extra: Record<string, string> = {}) =>
  new Map(Object.entries({ 'index.html': 'home', '404.html': 'missing', 'sitemap.xml': '<urlset/>', ...extra }));

describe('writeSite', () => {
  it('writes every file into a missing folder, creating sub-folders', async () => {
    const out = join(dir, 'out');
    await writeSite(out, build({ 'issues/a/index.html': 'A' }));
    expect(await readFile(join(out, 'issues/a/index.html'), 'utf8')).toBe('A');
  });

  it('replaces a previous build whole, so an unpublished issue leaves no page behind', async () => {
    await writeSite(dir, build({ 'issues/a/index.html': 'A' }));
    await writeSite(dir, build({ 'issues/b/index.html': 'B' }));
    expect((await readdir(join(dir, 'issues'))).sort()).toEqual(['b']);
  });

  it('refuses a folder that holds something else, and leaves it as it was', async () => {
    await writeFile(join(dir, 'notes.txt'), 'keep me');
    await expect(writeSite(dir, build())).rejects.toThrow(/not a previous site build/);
    expect(await readdir(dir)).toEqual(['notes.txt']);
  });
});

describe('siteDigest', () => {
  it('is the same for the same files in any insertion order, and changes with one byte', () => {
    const a = build({ 'x.html': '1' });
    const b = new Map([...a].reverse());
    expect(siteDigest(a)).toBe(siteDigest(b));
    expect(siteDigest(build({ 'x.html': '2' }))).not.toBe(siteDigest(a));
  });
});
