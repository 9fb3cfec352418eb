import { describe, expect, it } from 'vitest';
import { loadDisposableDomains } from '../../src/core/subscribe/disposable-domains.js';
import { domainOf, mailboxKeyOf } from '../../src/core/subscribe/input.js';
import {
  createMultiClientApp,
  createSubscribeApp,
  expectAccepted,
  expectErrorCode,
  expectValidationError,
  forwardedBody,
  postJson,
  subscribeLogLines,
} from './support.js';

// docs/subscribe.md "Mailbox keys", "Throwaway addresses" and "Trusted proxies".

describe('mailboxKeyOf', () => {
  it.each([
    ['VICTIM@gmail.com', 'victim@gmail.com'],
    ['v.ic.tim@gmail.com', 'victim@gmail.com'],
    ['victim+1@gmail.com', 'victim@gmail.com'],
    ['V.Ictim+news@GoogleMail.com', 'victim@gmail.com'],
    ['jane.doe+x@example.com', 'jane.doe@example.com'],
    ['Jane.Doe@Example.COM', 'jane.doe@example.com'],
    ['+only@example.com', '+only@example.com'],
    ['"odd@local"@example.com', '"odd@local"@example.com'],
  ])('keys %s as %s', (email, key) => {
    expect(mailboxKeyOf(email)).toBe(key);
  });

  it('takes the domain after the last @', () => {
    expect(domainOf('"a@b"@Mail.Example')).toBe('mail.example');
  });
});

describe('one mailbox, one address', () => {
  it('forwards one spelling of a gmail mailbox and answers the others as repeats, forwarding the address as typed', async () => {
    const { app, calls, logs } = createSubscribeApp();
    for (const email of ['v.ictim@gmail.com', 'victim+1@gmail.com', 'VICTIM@gmail.com', 'victim@googlemail.com']) {
      await expectAccepted(await postJson(app, { email, optInAttestation: true }));
    }
    expect(calls).toHaveLength(1);
    expect(forwardedBody(calls[0])).toMatchObject({ email: 'v.ictim@gmail.com' });
    expect(subscribeLogLines(logs).map((line) => line.outcome)).toEqual(['forwarded', 'deduped', 'deduped', 'deduped']);
  });

  it('keeps dots apart at a provider that does not ignore them', async () => {
    const { app, calls } = createSubscribeApp();
    await postJson(app, { email: 'jane.doe@example.com', optInAttestation: true });
    await postJson(app, { email: 'janedoe@example.com', optInAttestation: true });
    expect(calls).toHaveLength(2);
  });
});

describe('throwaway addresses (SUBSCRIBE_BLOCK_DISPOSABLE)', () => {
  it(`reads mailchecker's list: a listed domain and its subdomains, not ordinary ones`, async () => {
    const isDisposable = await loadDisposableDomains();
    expect(['mailinator.com', 'MAILINATOR.com', 'x.mailinator.com', 'guerrillamail.com'].map(isDisposable)).toEqual([
      true,
      true,
      true,
      true,
    ]);
    expect(['gmail.com', 'example.com', 'proton.me', 'com'].map(isDisposable)).toEqual([false, false, false, false]);
  });

  it('names the package to install when it is missing', async () => {
    const missing = Object.assign(new Error("Cannot find package 'mailchecker'"), { code: 'ERR_MODULE_NOT_FOUND' });
    await expect(loadDisposableDomains(() => Promise.reject(missing))).rejects.toThrow(
      'SUBSCRIBE_BLOCK_DISPOSABLE=true needs the package mailchecker, which is not installed: run `npm install mailchecker`',
    );
  });

  it('refuses a disposable domain with 422 naming email, before anything goes upstream or is counted', async () => {
    const isDisposableDomain = await loadDisposableDomains();
    const { app, calls, logs } = createSubscribeApp({ deps: { isDisposableDomain } });
    const body = await expectValidationError(await postJson(app, { email: 'bot@mailinator.com', optInAttestation: true }), 'email');
    expect(body.error.details).toEqual([{ path: 'email', message: 'must not be a disposable (throwaway) address' }]);
    expect(calls).toHaveLength(0);
    expect(subscribeLogLines(logs)).toEqual([expect.objectContaining({ outcome: 'rejected', reason: 'VALIDATION_ERROR' })]);
    await expectAccepted(await postJson(app, { email: 'person@example.com', optInAttestation: true }));
    expect(calls).toHaveLength(1);
  });
});

describe('trusted proxies by address (TRUSTED_PROXIES)', () => {
  const env = { SUBSCRIBE_RATE_LIMIT_PER_MINUTE: '3', TRUSTED_PROXIES: '10.0.0.0/8' };
  const post = (app: ReturnType<typeof createMultiClientApp>['app'], n: number, socket: string, forwarded: string) =>
    postJson(
      app,
      { email: `reader${n}@example.com`, optInAttestation: true },
      { 'X-Test-Socket-Ip': socket, 'X-Forwarded-For': forwarded },
    );

  it('does not read X-Forwarded-For from a client that reaches the port directly: 3 of 6 spoofed posts pass a limit of 3', async () => {
    const { app, calls } = createMultiClientApp(env);
    const statuses: number[] = [];
    for (let n = 1; n <= 6; n += 1) statuses.push((await post(app, n, '198.51.100.9', `203.0.113.${n}`)).status);
    expect(statuses).toEqual([200, 200, 200, 429, 429, 429]);
    expect(calls).toHaveLength(3);
  });

  it('reads it behind a listed proxy, so visitors behind one proxy are counted apart', async () => {
    const { app, calls } = createMultiClientApp(env);
    for (let n = 1; n <= 3; n += 1) await expectAccepted(await post(app, n, '10.0.0.1', '203.0.113.1'));
    await expectErrorCode(await post(app, 4, '10.0.0.1', '6.6.6.6, 203.0.113.1'), 429, 'RATE_LIMITED');
    await expectAccepted(await post(app, 5, '10.0.0.2', '203.0.113.2'));
    expect(calls).toHaveLength(4);
  });
});
