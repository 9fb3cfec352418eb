import { describe, expect, it } from 'vitest';
import { TEST_API_KEY } from '../helpers.js';
import { EMAIL, createSubscribeApp, postJson, postForm, forwardedBody, expectAccepted } from './support.js';

// docs/contract.md "POST /api/subscribe": the Create Subscriber body, built field by field from the visitor's input and the configuration.

describe('POST /api/subscribe', () => {
  describe('forwarded body', () => {
    it('sends the upstream exactly email, optInAttestation, sourceType embed and source website by default', async () => {
      const { app, calls } = createSubscribeApp();
      await postJson(app, { email: EMAIL, optInAttestation: true });
      expect(calls).toHaveLength(1);
      expect(forwardedBody(calls[0])).toStrictEqual({
        email: EMAIL,
        optInAttestation: true,
        sourceType: 'embed',
        source: 'website',
      });
    });

    it('forwards source and sourcePlatform when the client gives them', async () => {
      const { app, calls } = createSubscribeApp();
      await postJson(app, { email: EMAIL, optInAttestation: true, source: 'footer-form', sourcePlatform: 'linkedin' });
      expect(forwardedBody(calls[0])).toStrictEqual({
        email: EMAIL,
        optInAttestation: true,
        sourceType: 'embed',
        source: 'footer-form',
        sourcePlatform: 'linkedin',
      });
    });

    it('accepts a source of exactly 160 characters', async () => {
      const { app, calls } = createSubscribeApp();
      const source = 's'.repeat(160);
      await expectAccepted(await postJson(app, { email: EMAIL, optInAttestation: true, source }));
      expect(forwardedBody(calls[0])).toMatchObject({ source });
    });

    it('never forwards client-sent sourceType, status, workspaceId, sourceIssueId or other extra fields', async () => {
      const { app, calls } = createSubscribeApp();
      const response = await postJson(app, {
        email: EMAIL,
        optInAttestation: true,
        sourceType: 'import',
        status: 'subscribed',
        workspaceId: 'ws_attacker',
        accountSetId: 'as_attacker',
        sourceIssueId: 'iss_123',
        id: 'sub_9999',
      });
      await expectAccepted(response);
      expect(forwardedBody(calls[0])).toStrictEqual({
        email: EMAIL,
        optInAttestation: true,
        sourceType: 'embed',
        source: 'website',
      });
    });

    it('never forwards extra fields of a form post either', async () => {
      const { app, calls } = createSubscribeApp();
      await postForm(
        app,
        { email: EMAIL, optInAttestation: 'on', sourceType: 'import', status: 'blocked', workspaceId: 'ws_attacker' },
        { Accept: 'application/json' },
      );
      expect(forwardedBody(calls[0])).toStrictEqual({
        email: EMAIL,
        optInAttestation: true,
        sourceType: 'embed',
        source: 'website',
      });
    });

    it('uses SUBSCRIBE_SOURCE_TYPE and SUBSCRIBE_DEFAULT_SOURCE from the config', async () => {
      const { app, calls } = createSubscribeApp({
        env: { SUBSCRIBE_SOURCE_TYPE: 'subscribe_page', SUBSCRIBE_DEFAULT_SOURCE: 'homepage-footer' },
      });
      await postJson(app, { email: EMAIL, optInAttestation: true, sourceType: 'api' });
      expect(forwardedBody(calls[0])).toStrictEqual({
        email: EMAIL,
        optInAttestation: true,
        sourceType: 'subscribe_page',
        source: 'homepage-footer',
      });
    });

    it('sends the API key as a bearer token and passes on no header of the visitor', async () => {
      const { app, calls } = createSubscribeApp();
      await postJson(
        app,
        { email: EMAIL, optInAttestation: true },
        {
          Cookie: 'session=visitor-cookie',
          'X-Forwarded-For': '198.51.100.23',
          'User-Agent': 'VisitorBrowser/1.0',
          Referer: 'https://site.example/newsletter',
          Origin: 'https://site.example',
          'X-Custom-Visitor': 'visitor-value',
        },
      );
      expect(calls).toHaveLength(1);
      const headers = calls[0]?.headers ?? new Headers();
      expect(headers.get('authorization')).toBe(`Bearer ${TEST_API_KEY}`);
      expect([...headers.keys()].sort()).toEqual(['accept', 'authorization', 'content-type']);
      expect(headers.get('content-type')).toBe('application/json');
      for (const [, value] of headers) {
        expect(value).not.toMatch(/visitor|198\.51\.100\.23|site\.example/i);
      }
    });
  });
});
