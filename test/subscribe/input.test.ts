import { describe, expect, it } from 'vitest';
import { createSubscribeInputSchema } from '../../src/core/subscribe/input.js';
import { parseOrThrow } from '../../src/core/validation.js';
import { TEST_BASE_URL } from '../helpers.js';
import {
  PATH,
  EMAIL,
  createSubscribeApp,
  postJson,
  postForm,
  postMultipart,
  postChunked,
  forwardedBody,
  emailOfLength,
  expectValidationError,
  expectErrorCode,
  expectAccepted,
} from './support.js';

// docs/contract.md "POST /api/subscribe": what it accepts and how it reads the body: media types, size and validation.

describe('POST /api/subscribe', () => {
  describe('accepted input', () => {
    it('accepts a JSON body and makes exactly one Create Subscriber call', async () => {
      const { app, calls } = createSubscribeApp();
      const response = await postJson(app, { email: EMAIL, optInAttestation: true });
      await expectAccepted(response);
      expect(calls).toHaveLength(1);
      expect(calls[0]?.method).toBe('POST');
      expect(calls[0]?.url.href).toBe(`${TEST_BASE_URL}/newsletter/subscribers`);
    });

    it('accepts an urlencoded form post with a checked checkbox', async () => {
      const { app, calls } = createSubscribeApp();
      const response = await postForm(app, { email: EMAIL, optInAttestation: 'on' }, { Accept: 'application/json' });
      await expectAccepted(response);
      expect(calls).toHaveLength(1);
      expect(forwardedBody(calls[0])).toMatchObject({ email: EMAIL, optInAttestation: true });
    });

    it('accepts a multipart/form-data post built with FormData', async () => {
      const { app, calls } = createSubscribeApp();
      const response = await postMultipart(app, { email: EMAIL, optInAttestation: 'on' }, { Accept: 'application/json' });
      await expectAccepted(response);
      expect(calls).toHaveLength(1);
      expect(forwardedBody(calls[0])).toMatchObject({ email: EMAIL, optInAttestation: true });
    });

    it('accepts a JSON body whose content type carries a charset parameter', async () => {
      const { app, calls } = createSubscribeApp();
      const response = await postJson(app, { email: EMAIL, optInAttestation: true }, { 'Content-Type': 'Application/JSON; charset=utf-8' });
      await expectAccepted(response);
      expect(calls).toHaveLength(1);
    });

    it('accepts a chunked JSON body with no Content-Length when it is under the cap', async () => {
      const { app, calls } = createSubscribeApp();
      const response = await postChunked(app, JSON.stringify({ email: EMAIL, optInAttestation: true, padding: 'x'.repeat(4000) }));
      await expectAccepted(response);
      expect(calls).toHaveLength(1);
    });
  });

  describe('content type and size', () => {
    it('returns 415 and makes no upstream call for a text/plain body', async () => {
      const { app, calls } = createSubscribeApp();
      const response = await app.request(PATH, {
        method: 'POST',
        headers: { 'Content-Type': 'text/plain' },
        body: JSON.stringify({ email: EMAIL, optInAttestation: true }),
      });
      await expectErrorCode(response, 415, 'UNSUPPORTED_MEDIA_TYPE');
      expect(calls).toHaveLength(0);
    });

    it('returns 415 and makes no upstream call for a body with no content type', async () => {
      const { app, calls } = createSubscribeApp();
      const request = new Request(`http://localhost${PATH}`, {
        method: 'POST',
        body: new TextEncoder().encode(JSON.stringify({ email: EMAIL, optInAttestation: true })),
      });
      expect(request.headers.get('content-type')).toBeNull();
      const response = await app.request(request);
      await expectErrorCode(response, 415, 'UNSUPPORTED_MEDIA_TYPE');
      expect(calls).toHaveLength(0);
    });

    it('returns 413 and makes no upstream call for a declared body over 8 KB', async () => {
      const { app, calls } = createSubscribeApp();
      const body = JSON.stringify({ email: EMAIL, optInAttestation: true, padding: 'x'.repeat(9000) });
      const response = await app.request(PATH, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'Content-Length': String(new TextEncoder().encode(body).length) },
        body,
      });
      await expectErrorCode(response, 413, 'PAYLOAD_TOO_LARGE');
      expect(calls).toHaveLength(0);
    });

    it('returns 413 and makes no upstream call for a chunked body over 8 KB with no Content-Length', async () => {
      const { app, calls } = createSubscribeApp();
      const response = await postChunked(app, JSON.stringify({ email: EMAIL, optInAttestation: true, padding: 'x'.repeat(9000) }));
      await expectErrorCode(response, 413, 'PAYLOAD_TOO_LARGE');
      expect(calls).toHaveLength(0);
    });

    it('returns 422 in the envelope and makes no upstream call for malformed JSON', async () => {
      const { app, calls } = createSubscribeApp();
      const response = await postJson(app, '{"email": "jane@example.com", "optInAttestation": tru');
      await expectValidationError(response, '(body)');
      expect(calls).toHaveLength(0);
    });

    it.each(
      [
        { label: 'an array', raw: '[{"email":"jane@example.com","optInAttestation":true}]' },
        { label: 'a string', raw: '"jane@example.com"' },
        { label: 'null', raw: 'null' },
        { label: 'a number', raw: '42' },
      ].map((entry) => [entry.label, entry] as const),
    )('returns 422 (never 500) and makes no upstream call when the JSON body is %s', async (_label, { raw }) => {
      const { app, calls } = createSubscribeApp();
      const response = await postJson(app, raw);
      await expectValidationError(response, '(body)');
      expect(calls).toHaveLength(0);
    });
  });

  describe('validation', () => {
    it.each(
      [
        { label: 'email is missing', body: { optInAttestation: true }, path: 'email' },
        { label: 'email is empty', body: { email: '   ', optInAttestation: true }, path: 'email' },
        { label: 'email is not an address', body: { email: 'not-an-email', optInAttestation: true }, path: 'email' },
        { label: 'email is not a string', body: { email: ['jane@example.com'], optInAttestation: true }, path: 'email' },
        { label: 'email is 255 characters long', body: { email: emailOfLength(255), optInAttestation: true }, path: 'email' },
        { label: 'email contains CR/LF', body: { email: 'jane@example.com\r\nBcc: x@example.com', optInAttestation: true }, path: 'email' },
        { label: 'email contains a bare LF', body: { email: 'jane\n@example.com', optInAttestation: true }, path: 'email' },
        { label: 'email contains NUL', body: { email: 'jane@example.com\u0000', optInAttestation: true }, path: 'email' },
        { label: 'optInAttestation is missing', body: { email: EMAIL }, path: 'optInAttestation' },
        { label: 'optInAttestation is false', body: { email: EMAIL, optInAttestation: false }, path: 'optInAttestation' },
        { label: 'optInAttestation is "false"', body: { email: EMAIL, optInAttestation: 'false' }, path: 'optInAttestation' },
        { label: 'optInAttestation is "no"', body: { email: EMAIL, optInAttestation: 'no' }, path: 'optInAttestation' },
        { label: 'optInAttestation is 0', body: { email: EMAIL, optInAttestation: 0 }, path: 'optInAttestation' },
        { label: 'optInAttestation is "maybe"', body: { email: EMAIL, optInAttestation: 'maybe' }, path: 'optInAttestation' },
        { label: 'optInAttestation is null', body: { email: EMAIL, optInAttestation: null }, path: 'optInAttestation' },
        { label: 'source is over 160 characters', body: { email: EMAIL, optInAttestation: true, source: 's'.repeat(161) }, path: 'source' },
        { label: 'source contains CR/LF', body: { email: EMAIL, optInAttestation: true, source: 'footer\r\nInjected: 1' }, path: 'source' },
        {
          label: "sourcePlatform is 'facebook'",
          body: { email: EMAIL, optInAttestation: true, sourcePlatform: 'facebook' },
          path: 'sourcePlatform',
        },
      ].map((entry) => [entry.label, entry] as const),
    )('returns 422 and makes no upstream call when %s', async (_label, { body, path }) => {
      const { app, calls } = createSubscribeApp();
      const response = await postJson(app, body);
      await expectValidationError(response, path);
      expect(calls).toHaveLength(0);
    });

    // Only a form checkbox sends text; a JSON caller must send the boolean (docs/contract.md "POST /api/subscribe").
    it.each(['true', 'on', 'yes', '1', 1])(
      'returns 422 and makes no upstream call when JSON sends optInAttestation as %j instead of true',
      async (value) => {
        const { app, calls } = createSubscribeApp();
        const response = await postJson(app, { email: EMAIL, optInAttestation: value });
        await expectValidationError(response, 'optInAttestation');
        expect(calls).toHaveLength(0);
      },
    );

    it('returns 422 and makes no upstream call when optInAttestation is only inherited via __proto__', async () => {
      const { app, calls } = createSubscribeApp();
      const raw = '{"email":"jane@example.com","__proto__":{"optInAttestation":true}}';
      const response = await postJson(app, raw);
      await expectValidationError(response, 'optInAttestation');
      expect(calls).toHaveLength(0);
    });

    it.each(['off', 'false', '0', 'no', '', 'maybe'])(
      'returns 422 and makes no upstream call when a form sends optInAttestation=%j',
      async (value) => {
        const { app, calls } = createSubscribeApp();
        const response = await postForm(app, { email: EMAIL, optInAttestation: value }, { Accept: 'application/json' });
        await expectValidationError(response, 'optInAttestation');
        expect(calls).toHaveLength(0);
      },
    );

    it('returns 422 and makes no upstream call when a form has no optInAttestation (checkbox left unchecked)', async () => {
      const { app, calls } = createSubscribeApp();
      const response = await postForm(app, { email: EMAIL }, { Accept: 'application/json' });
      await expectValidationError(response, 'optInAttestation');
      expect(calls).toHaveLength(0);
    });

    it.each(['on', 'true', '1', 'yes'])('accepts optInAttestation=%s from a form and makes exactly one upstream call', async (value) => {
      const { app, calls } = createSubscribeApp();
      const response = await postForm(app, { email: EMAIL, optInAttestation: value }, { Accept: 'application/json' });
      await expectAccepted(response);
      expect(calls).toHaveLength(1);
      expect(forwardedBody(calls[0])).toMatchObject({ optInAttestation: true });
    });

    it('accepts an email of exactly 254 characters', async () => {
      const { app, calls } = createSubscribeApp();
      const email = emailOfLength(254);
      expect(email).toHaveLength(254);
      const response = await postJson(app, { email, optInAttestation: true });
      await expectAccepted(response);
      expect(calls).toHaveLength(1);
      expect(forwardedBody(calls[0])).toMatchObject({ email });
    });

    // RFC 5321 §4.5.3.1 (docs/subscribe.md "Which addresses are accepted"): refused here, never sent upstream.
    it.each([
      ['a local part of 65 characters', `${'a'.repeat(65)}@example.com`, 'before the @'],
      ['a domain label of 64 characters', `jane@${'b'.repeat(64)}.example`, 'between the dots'],
      ['a top-level label of 64 characters', `jane@example.${'c'.repeat(64)}`, 'between the dots'],
      // 58 characters as typed, 64 as the A-label the upstream and DNS see.
      ['a Unicode domain label whose A-label is over 63 characters', `jane@${'ü'.repeat(58)}.example`, 'between the dots'],
    ])('returns 422 on email and makes no upstream call for %s', async (_label, email, rule) => {
      const { app, calls } = createSubscribeApp();
      const response = await postJson(app, { email, optInAttestation: true });
      expect(response.status).toBe(422);
      const body = (await response.json()) as { error: { details: { path: string; message: string }[] } };
      expect(body.error.details).toEqual([{ path: 'email', message: expect.stringContaining(rule) }]);
      expect(calls).toHaveLength(0);
    });

    it('accepts a local part of 64 characters and domain labels of 63, at the limits', async () => {
      const { app, calls } = createSubscribeApp();
      const email = `${'a'.repeat(64)}@${'b'.repeat(63)}.${'c'.repeat(63)}`;
      await expectAccepted(await postJson(app, { email, optInAttestation: true }));
      expect(forwardedBody(calls[0])).toMatchObject({ email });
    });

    it('accepts a domain written in Unicode and sends it upstream as its A-labels', async () => {
      const { app, calls } = createSubscribeApp();
      await expectAccepted(await postJson(app, { email: 'jane@Bücher.example', optInAttestation: true }));
      expect(forwardedBody(calls[0])).toMatchObject({ email: 'jane@xn--bcher-kva.example' });
    });

    it('accepts A-labels as they are sent, an internationalised top-level domain too', async () => {
      const { app, calls } = createSubscribeApp();
      await expectAccepted(await postJson(app, { email: 'info@xn--e1afmkfd.xn--p1ai', optInAttestation: true }));
      await expectAccepted(await postForm(app, { email: 'kontakt@пример.рф', optInAttestation: 'on' }, { Accept: 'application/json' }));
      expect(calls.map((call) => (forwardedBody(call) as { email: string }).email)).toEqual([
        'info@xn--e1afmkfd.xn--p1ai',
        'kontakt@xn--e1afmkfd.xn--p1ai',
      ]);
    });

    it('returns 422 for a local part in Unicode, which the upstream cannot be relied on to deliver', async () => {
      const { app, calls } = createSubscribeApp();
      await expectValidationError(await postJson(app, { email: 'jané@example.com', optInAttestation: true }), 'email');
      expect(calls).toHaveLength(0);
    });

    it('trims the email before forwarding it', async () => {
      const { app, calls } = createSubscribeApp();
      const response = await postJson(app, { email: `  ${EMAIL}\t `, optInAttestation: true });
      await expectAccepted(response);
      expect(forwardedBody(calls[0])).toMatchObject({ email: EMAIL });
    });

    it('does not echo the submitted email in a validation error', async () => {
      const { app } = createSubscribeApp();
      const response = await postJson(app, { email: 'secret-person@@example.com', optInAttestation: true });
      expect(response.status).toBe(422);
      expect(await response.text()).not.toContain('secret-person');
    });
  });
});

describe('createSubscribeInputSchema', () => {
  const formSchema = createSubscribeInputSchema(['true', 'on', '1', 'yes']);
  const jsonSchema = createSubscribeInputSchema([]);

  it.each(['on', 'true', '1', 'yes', ' YES '])('reads the form checkbox value %j as a ticked attestation', (value) => {
    expect(parseOrThrow(formSchema, { email: EMAIL, optInAttestation: value }).optInAttestation).toBe(true);
  });

  it.each(['off', 'false', '0', 'no', 'y', ''])('refuses the form checkbox value %j in our own words', (value) => {
    expect(() => parseOrThrow(formSchema, { email: EMAIL, optInAttestation: value })).toThrow(
      expect.objectContaining({
        code: 'VALIDATION_ERROR',
        details: [{ path: 'optInAttestation', message: 'must be true: the subscriber must confirm they opted in' }],
      }),
    );
  });

  it('accepts only the boolean true from JSON, not its text', () => {
    expect(parseOrThrow(jsonSchema, { email: EMAIL, optInAttestation: true }).optInAttestation).toBe(true);
    expect(() => parseOrThrow(jsonSchema, { email: EMAIL, optInAttestation: 'true' })).toThrow(
      expect.objectContaining({ code: 'VALIDATION_ERROR' }),
    );
  });

  it('trims the address and turns a blank source or platform into none', () => {
    expect(parseOrThrow(jsonSchema, { email: `  ${EMAIL} `, optInAttestation: true, source: ' ', sourcePlatform: '' })).toEqual({
      email: EMAIL,
      optInAttestation: true,
      source: undefined,
      sourcePlatform: undefined,
    });
  });
});
