import { describe, expect, it } from 'vitest';
import { main } from '../src/tools/check.js';
import { createArchive } from './support/fake-upstream/archive.js';
import { createFakeUpstream } from './support/fake-upstream/fake.js';
import { createFakeClock } from './helpers.js';

const KEY = 'check-key-5d1e9b7a-not-real';

/** `npm run check`'s main over a fake upstream, with its lines and exit code. */
async function check(env: Record<string, string>, setUp: (fake: ReturnType<typeof createFakeUpstream>) => void = () => {}) {
  const fake = createFakeUpstream({ apiKey: KEY, publication: createArchive({ issues: 30, contentBytes: 100 }) });
  setUp(fake);
  const lines: string[] = [];
  const exitCode = await main({
    env: { NEWSLETTER_API_KEY: KEY, NEWSLETTER_API_BASE_URL: fake.baseUrl, ...env },
    write: (line) => lines.push(line),
    fetch: fake.fetch,
    now: createFakeClock().now,
  });
  return { exitCode, lines, output: lines.join('\n'), fake };
}

describe('npm run check', () => {
  it('exits 0 when everything the site needs works, one line per finding and a summary', async () => {
    const { exitCode, lines } = await check({});
    expect(exitCode).toBe(0);
    expect(lines).toEqual([
      'ok    the key is accepted (List Categories answered in 0 ms)',
      'ok    categories: 4',
      'ok    the row-limit parameter limit is honoured (asked 1 row, got 1) (0 ms)',
      'ok    paging by offset under offset works (the next position answered the next row) (0 ms)',
      'ok    the archive: 30 public sent issues in 2 calls, 0 ms (rows per page: 30, 0; 200 asked)',
      'ok    no malformed issue rows dropped',
      'ok    Get Issue By Slug answered issue-30-weekly-notes in 0 ms',
      'check: everything the site needs works (0 failing, exit 0)',
    ]);
  });

  it('exits 1 and names NEWSLETTER_API_KEY when the upstream rejects the key, without printing it', async () => {
    const { exitCode, output } = await check({ NEWSLETTER_API_KEY: 'some-other-key-not-real' });
    expect(exitCode).toBe(1);
    expect(output).toContain('FAIL  List Categories: the upstream rejected NEWSLETTER_API_KEY (401)');
    expect(output).not.toContain('some-other-key-not-real');
  });

  it('exits 1 and names NEWSLETTER_API_BASE_URL when a list path answers 404', async () => {
    const fake = createFakeUpstream({ apiKey: KEY });
    // The base URL names a root the service does not have: every path under it is a 404.
    const wrongRoot: typeof fetch = async (input, init) => {
      const request = new Request(input, init);
      return fake.fetch(new Request(request.url.replace('/api/v1/', '/v1/nothing/'), request));
    };
    const lines: string[] = [];
    const exitCode = await main({
      env: { NEWSLETTER_API_KEY: KEY, NEWSLETTER_API_BASE_URL: fake.baseUrl.replace(/\/v1$/, '/api/v1') },
      write: (line) => lines.push(line),
      fetch: wrongRoot,
    });
    expect(exitCode).toBe(1);
    expect(lines.join('\n')).toContain('NEWSLETTER_API_BASE_URL may be wrong');
  });

  it('exits 1 when a call fails, with what failed', async () => {
    const { exitCode, output } = await check({}, (fake) => fake.setMode({ kind: 'status-storm', statuses: [501] }));
    expect(exitCode).toBe(1);
    expect(output).toMatch(/FAIL {2}List Categories failed: upstream failed \(501\)/);
  });

  it('backs off between its calls to a failing upstream: its next call waits out the pause and is made once, never in a burst', async () => {
    const clock = createFakeClock();
    const sleeps: number[] = [];
    const fake = createFakeUpstream({ apiKey: KEY, publication: createArchive({ issues: 30, contentBytes: 100 }) });
    fake.setMode({ kind: 'status-storm', statuses: [500] });
    const lines: string[] = [];
    const exitCode = await main({
      env: { NEWSLETTER_API_KEY: KEY, NEWSLETTER_API_BASE_URL: fake.baseUrl },
      write: (line) => lines.push(line),
      fetch: fake.fetch,
      now: clock.now,
      sleep: async (ms) => {
        sleeps.push(ms);
        clock.advance(ms);
      },
    });
    expect(exitCode).toBe(1);
    expect(lines.filter((line) => line.startsWith('FAIL'))).toEqual([
      'FAIL  List Categories failed: upstream failed (500)',
      'FAIL  List Issues or Get Issue By Slug failed: upstream failed (500)',
    ]);
    // List Categories with its two retries; then, after the pause they began, List Issues once.
    expect(fake.counts()).toMatchObject({ 'GET /newsletter/categories': 3, 'GET /newsletter/issues': 1 });
    expect(sleeps).toHaveLength(3);
    expect(sleeps[2]).toBeGreaterThanOrEqual(500);
    expect(sleeps[2]).toBeLessThanOrEqual(1000);
  });

  it('exits 2 on invalid configuration, one line per problem, and calls nothing', async () => {
    const { exitCode, lines, fake } = await check({ NEWSLETTER_API_BASE_URL: 'http://api.example.com/v2', UPSTREAM_LIST_PAGING: 'cursor' });
    expect(exitCode).toBe(2);
    expect(lines).toEqual([
      'FAIL  config error: NEWSLETTER_API_BASE_URL must use https (plain http is accepted only for a loopback host)',
      'FAIL  config error: UPSTREAM_LIST_PAGING must be offset or page',
      'check: the configuration is invalid; nothing was checked (see README.md "Configuration") (2 failing, exit 2)',
    ]);
    expect(fake.counts()).toEqual({ unknownSlugCalls: 0 });
  });

  it('never calls Create Subscriber, and never prints the key', async () => {
    const { output, fake } = await check({});
    expect(fake.callsFor('POST /newsletter/subscribers')).toBe(0);
    expect(Object.keys(fake.counts()).filter((key) => key.startsWith('POST'))).toEqual([]);
    expect(output).not.toContain(KEY);
  });

  it('checks the demo upstream in demo mode and says so', async () => {
    const lines: string[] = [];
    expect(await main({ env: {}, write: (line) => lines.push(line) })).toBe(0);
    expect(lines[0]).toBe('note  demo mode (NEWSLETTER_API_KEY and NEWSLETTER_API_BASE_URL unset): checking the demo upstream');
  });
});
