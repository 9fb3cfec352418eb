import { spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createArchive } from '../support/fake-upstream/archive.js';
import { createFakeUpstream } from '../support/fake-upstream/fake.js';
import { startFakeUpstreamServer, type FakeUpstreamServer } from '../support/fake-upstream/server.js';
import { buildSite, createInProcessService, type SiteOptions } from '../../src/tools/site/build.js';
import { readPublication } from '../../src/tools/site/read.js';
import { API_URL, createDefaultService, siteAssets, siteOptions } from './site-support.js';

const API_KEY = 'fake-site-build-key-0d5e8a71-not-real';
const BY_SLUG = 'GET /newsletter/issues/by-slug/:slug';
const ISSUES = 450;

let assets: SiteOptions['assets'];
beforeAll(async () => {
  assets = await siteAssets();
});

/** Every file of a built site in which `text` appears. */
function filesContaining(files: ReadonlyMap<string, string>, text: string): string[] {
  return [...files].filter(([, content]) => content.includes(text)).map(([path]) => path);
}

describe('site:build against a default service of 450 issues from the fake upstream', () => {
  it('reads every issue and writes its page, with no setting raised', async () => {
    const fake = createFakeUpstream({
      apiKey: API_KEY,
      baseUrl: 'https://upstream.test/v1',
      publication: createArchive({ issues: ISSUES }),
    });
    const service = createDefaultService({ NEWSLETTER_API_KEY: API_KEY, NEWSLETTER_API_BASE_URL: fake.baseUrl }, fake.fetch);
    const publication = await readPublication({ apiUrl: API_URL, fetch: service.fetch, sleep: service.sleep, now: service.now });
    expect(publication.issues).toHaveLength(ISSUES);
    const files = buildSite(publication, siteOptions(assets));
    expect([...files.keys()].filter((path) => path.startsWith('issues/'))).toHaveLength(ISSUES);
    expect(filesContaining(files, API_KEY)).toEqual([]);
    // The list rows carry the letters: no issue costs an upstream call, no read is refused.
    expect(fake.callsFor(BY_SLUG)).toBe(0);
    expect(service.statuses.filter((status) => status !== 200)).toEqual([]);
    expect(service.waits).toEqual([]);
  });
});

describe('site:build --read-upstream (the service in the build process, the key from the environment)', () => {
  it('reads 450 issues from the upstream and never puts the key in the site or a log line', async () => {
    const fake = createFakeUpstream({
      apiKey: API_KEY,
      baseUrl: 'https://upstream.test/v1',
      publication: createArchive({ issues: ISSUES }),
    });
    const lines: string[] = [];
    const fetch = createInProcessService(
      { NEWSLETTER_API_KEY: API_KEY, NEWSLETTER_API_BASE_URL: fake.baseUrl },
      { fetch: fake.fetch, write: (line) => lines.push(line) },
    );
    const publication = await readPublication({
      apiUrl: API_URL,
      fetch,
      sleep: async () => expect.unreachable('a build in process is never refused'),
    });
    expect(publication.issues).toHaveLength(ISSUES);
    expect(fake.callsFor(BY_SLUG)).toBe(0);
    const files = buildSite(publication, siteOptions(assets));
    expect(filesContaining(files, API_KEY)).toEqual([]);
    expect(lines.join('\n')).not.toContain(API_KEY);
  });

  it('refuses to start on a configuration the service would refuse, naming the variable, never the key', () => {
    expect(() =>
      createInProcessService(
        { NEWSLETTER_API_KEY: API_KEY, NEWSLETTER_API_BASE_URL: 'http://upstream.example/v1' },
        { write: () => undefined },
      ),
    ).toThrow(/NEWSLETTER_API_BASE_URL/);
    try {
      createInProcessService({ NEWSLETTER_API_KEY: API_KEY, NEWSLETTER_API_BASE_URL: 'nope' }, { write: () => undefined });
    } catch (error) {
      expect((error as Error).message).not.toContain(API_KEY);
    }
  });
});

describe('npm run site:build -- --read-upstream (the built command)', () => {
  let upstream: FakeUpstreamServer;
  let out: string;
  beforeAll(async () => {
    upstream = await startFakeUpstreamServer({ apiKey: API_KEY, publication: createArchive({ issues: 60 }) });
    out = await mkdtemp(join(tmpdir(), 'site-build-'));
  });
  afterAll(async () => {
    await upstream.stop();
    await rm(out, { recursive: true, force: true });
  });

  it('writes the site from the upstream with the key from the environment; the key is in no file and no output', async () => {
    const child = spawn(
      process.execPath,
      [
        'dist/tools/site/main.js',
        '--read-upstream',
        '--api',
        'https://news-api.example.com',
        '--site-url',
        'https://news.example.com/',
        '--out',
        out,
      ],
      {
        env: { PATH: process.env.PATH, NEWSLETTER_API_KEY: API_KEY, NEWSLETTER_API_BASE_URL: upstream.baseUrl, NODE_ENV: 'production' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(output).toMatch(/wrote \d+ files .* for 60 issues/);
    expect(code).toBe(0);
    expect(output).not.toContain(API_KEY);
    const written = await readdir(out, { recursive: true });
    expect(written).toContain(join('issues', 'issue-60-weekly-notes', 'index.html'));
    for (const path of written.filter((name) => /\.(html|xml|txt|js|css)$/.test(name))) {
      expect(await readFile(join(out, path), 'utf8'), path).not.toContain(API_KEY);
    }
  });
});
