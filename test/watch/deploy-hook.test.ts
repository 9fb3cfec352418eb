import { afterEach, describe, expect, it } from 'vitest';
import { createArchive } from '../support/fake-upstream/archive.js';
import { createFakeUpstream } from '../support/fake-upstream/fake.js';
import { startHookReceiver, type HookCall, type HookReceiver } from '../support/hook-receiver.js';
import { freePort } from '../free-port.js';
import { createFakeClock, createTestApp, TEST_API_KEY } from '../helpers.js';

const LIST = 'GET /newsletter/issues';
const TTL_MS = 60_000;
const receivers: HookReceiver[] = [];

afterEach(async () => {
  await Promise.all(receivers.splice(0).map((receiver) => receiver.stop()));
});

/**
 * The app over the one fake upstream (60 issues, each drafted the day before it is sent) with
 * DEPLOY_HOOK_URL pointing at a local receiver, and its watch ticked by hand as the Node entry's
 * timer ticks it. No visitor asks for anything unless a test says so.
 */
async function watchedSite(
  options: {
    statuses?: number[];
    onCall?: (call: HookCall, site: { app: ReturnType<typeof createTestApp>['app'] }) => Promise<void>;
    hookUrl?: string;
  } = {},
) {
  const clock = createFakeClock(Date.UTC(2026, 1, 1));
  const fake = createFakeUpstream({
    apiKey: TEST_API_KEY,
    baseUrl: 'https://newsletter.test/v1',
    publication: createArchive({ issues: 60, contentBytes: 1_000 }),
    now: clock.now,
  });
  let app: ReturnType<typeof createTestApp>['app'] | undefined;
  const receiver = await startHookReceiver({ statuses: options.statuses, onCall: (call) => options.onCall?.(call, { app: app! }) });
  receivers.push(receiver);
  const site = createTestApp({
    fetch: fake.fetch,
    clock,
    env: { NEWSLETTER_API_BASE_URL: fake.baseUrl, DEPLOY_HOOK_URL: options.hookUrl ?? receiver.url },
  });
  app = site.app;
  const watch = site.archiveWatch!;
  return {
    ...site,
    fake,
    receiver,
    tick: () => watch.tick(),
    /** A TTL later, one tick: the index is refreshed from the upstream and compared. */
    async nextTtl() {
      clock.advance(TTL_MS + 1);
      await watch.tick();
    },
    events: (event: string) => site.logs.entries().filter((entry) => entry.event === event),
  };
}

describe('the build hook (DEPLOY_HOOK_URL)', () => {
  it('takes its first look without a visitor and without a call, and makes none over six TTLs while nothing changes', async () => {
    const site = await watchedSite();
    await site.tick();
    expect(site.fake.callsFor(LIST)).toBeGreaterThan(0);
    for (let ttl = 0; ttl < 6; ttl += 1) await site.nextTtl();
    expect(site.receiver.calls).toEqual([]);
    expect(site.events('archive_watch_started')).toEqual([
      expect.objectContaining({ level: 'info', issues: 60, hook: site.receiver.origin }),
    ]);
  });

  it('calls the hook once for several changes found by one look, naming each slug and how it changed', async () => {
    const site = await watchedSite();
    await site.tick();
    const [, second, third] = site.fake.demo.issues.map((issue) => issue.slug!);
    site.fake.publish('new-one');
    site.fake.publish('new-two');
    site.fake.edit(third!, { subject: 'A corrected subject' });
    site.fake.unpublish(second!);
    await site.nextTtl();
    expect(site.receiver.calls).toHaveLength(1);
    const [call] = site.receiver.calls;
    expect(call).toMatchObject({ method: 'POST', headers: expect.objectContaining({ 'content-type': 'application/json' }) });
    expect(call!.body).toEqual({
      event: 'archive_changed',
      counts: { new: 2, edited: 1, unpublished: 1 },
      changes: expect.arrayContaining([
        { slug: 'new-one', kind: 'new' },
        { slug: 'new-two', kind: 'new' },
        { slug: third, kind: 'edited' },
        { slug: second, kind: 'unpublished' },
      ]),
      more: 0,
    });
    expect(call!.body!.changes).toHaveLength(4);
    for (let ttl = 0; ttl < 3; ttl += 1) await site.nextTtl();
    expect(site.receiver.calls).toHaveLength(1);
  });

  it('has the change served when the hook arrives: the build it starts reads the new issue and the edit', async () => {
    const seen: { listed: string[]; page: string | undefined }[] = [];
    const site = await watchedSite({
      onCall: async (_call, { app }) => {
        const listed = ((await (await app.request('/api/issues?limit=3')).json()) as { data: { slug: string }[] }).data.map(
          (issue) => issue.slug,
        );
        const page = (await (await app.request('/api/issues/issue-59-weekly-notes')).json()) as { data?: { subject: string } };
        seen.push({ listed, page: page.data?.subject });
      },
    });
    await site.tick();
    // The edited issue's page was read before the edit: its copy is in the cache.
    expect((await site.app.request('/api/issues/issue-59-weekly-notes')).status).toBe(200);
    site.fake.publish('sent-just-now');
    site.fake.edit('issue-59-weekly-notes', { subject: 'A corrected subject' });
    await site.nextTtl();
    expect(site.receiver.calls).toHaveLength(1);
    expect(seen).toEqual([{ listed: ['sent-just-now', 'issue-60-weekly-notes', 'issue-59-weekly-notes'], page: 'A corrected subject' }]);
  });

  it('retries a failed call with a growing pause, then calls no more once it is taken', async () => {
    const site = await watchedSite({ statuses: [500, 503] });
    await site.tick();
    site.fake.publish('new-one');
    await site.nextTtl();
    expect(site.receiver.calls.map((call) => call.status)).toEqual([500]);
    // Within the first pause (5 s): no call.
    site.clock.advance(4_000);
    await site.tick();
    expect(site.receiver.calls).toHaveLength(1);
    site.clock.advance(1_000);
    await site.tick();
    expect(site.receiver.calls.map((call) => call.status)).toEqual([500, 503]);
    // The second pause is 10 s.
    site.clock.advance(9_000);
    await site.tick();
    expect(site.receiver.calls).toHaveLength(2);
    site.clock.advance(1_000);
    await site.tick();
    expect(site.receiver.calls.map((call) => call.status)).toEqual([500, 503, 200]);
    expect(site.receiver.calls.map((call) => call.body?.changes)).toEqual(
      Array.from({ length: 3 }, () => [{ slug: 'new-one', kind: 'new' }]),
    );
    for (let ttl = 0; ttl < 3; ttl += 1) await site.nextTtl();
    expect(site.receiver.calls).toHaveLength(3);
    expect(site.events('deploy_hook_failed').map((line) => [line.status, line.attempts, line.retryInSeconds])).toEqual([
      [500, 1, 5],
      [503, 2, 10],
    ]);
    expect(site.events('deploy_hook_called')).toEqual([expect.objectContaining({ level: 'info', new: 1, status: 200, attempts: 3 })]);
  });

  it('puts changes found while a call waits for its retry into that call', async () => {
    const site = await watchedSite({ statuses: [502] });
    await site.tick();
    site.fake.publish('first');
    await site.nextTtl();
    site.fake.publish('second');
    await site.nextTtl();
    expect(site.receiver.calls).toHaveLength(2);
    expect(site.receiver.calls[1]!.body?.changes).toEqual([
      { slug: 'first', kind: 'new' },
      { slug: 'second', kind: 'new' },
    ]);
  });

  it('retries a receiver it cannot reach, saying so without its address', async () => {
    const port = await freePort();
    const site = await watchedSite({ hookUrl: `http://127.0.0.1:${port}/hooks/unreachable-token-not-real` });
    await site.tick();
    site.fake.publish('new-one');
    await site.nextTtl();
    expect(site.events('deploy_hook_failed')).toEqual([
      expect.objectContaining({ level: 'warn', reason: 'unreachable', attempts: 1, retryInSeconds: 5 }),
    ]);
    expect(site.logs.lines.join('\n')).not.toContain('unreachable-token-not-real');
  });

  it('never puts the API key or the hook address in the body, nor the hook token in a log line', async () => {
    const site = await watchedSite();
    await site.tick();
    site.fake.publish('new-one');
    await site.nextTtl();
    expect(site.receiver.calls).toHaveLength(1);
    const raw = site.receiver.calls[0]!.raw;
    expect(raw).not.toContain(TEST_API_KEY);
    expect(raw).not.toContain(site.receiver.token);
    expect(raw.length).toBeLessThan(300);
    expect(site.logs.lines.join('\n')).not.toContain(site.receiver.token);
    expect(site.events('deploy_hook_called')).toEqual([expect.objectContaining({ hook: site.receiver.origin })]);
  });

  it('drops a new issue from a call still to be retried once it is unpublished again: the site never had it', async () => {
    const site = await watchedSite({ statuses: [500] });
    await site.tick();
    site.fake.publish('short-lived');
    await site.nextTtl();
    expect(site.receiver.calls).toHaveLength(1);
    site.fake.unpublish('short-lived');
    for (let ttl = 0; ttl < 3; ttl += 1) await site.nextTtl();
    expect(site.receiver.calls).toHaveLength(1);
  });
});
