import type { Context } from 'hono';
import * as z from '../zod.js';
import { ApiError } from '../http/errors.js';
import { SOURCE_PLATFORMS } from '../upstream/schemas.js';
import { atMost, optional, parseOrThrow, preprocess, type JsonSchemaWords } from '../validation.js';

export const SUBSCRIBE_MAX_BODY_BYTES = 8 * 1024;
export const FORM_CHECKED_VALUES = ['true', 'on', '1', 'yes'] as const;
const FORM_TYPES = new Set(['application/x-www-form-urlencoded', 'multipart/form-data']);

/** zod's own `email` pattern, with an A-label top-level domain (`xn--p1ai`) allowed too. */
const EMAIL_PATTERN =
  /^(?:[A-Za-z0-9_'+-]+\.)*[A-Za-z0-9_'+-]*[A-Za-z0-9_+-]@(?:[A-Za-z0-9][A-Za-z0-9-]*\.)+(?:[A-Za-z]{2,}|xn--[A-Za-z0-9-]+)$/;

const noControlCharacters = () => z.regex(/^\P{Cc}*$/u, { error: 'must not contain control characters' });
const lengthRule = (fits: (email: string) => boolean, error: string) => z.refine<string>(fits, { error, abort: true });

/** By the URL parser's IDNA, on both runtimes: the upstream takes ASCII. */
function toAsciiDomain(email: string): string {
  const at = email.lastIndexOf('@');
  const domain = email.slice(at + 1);
  if (/^[\x00-\x7F]*$/.test(email) || at < 1 || !/^[\p{L}\p{M}\p{N}.\u3002\uFF0E\uFF61-]+$/u.test(domain)) return email;
  const ascii = URL.parse(`http://${domain}/`)?.hostname ?? '';
  return /^[a-z0-9.-]+$/.test(ascii) ? `${email.slice(0, at)}@${ascii}` : email;
}

export function createSubscribeInputSchema(checkedValues: readonly string[]) {
  return z.object({
    email: preprocess(
      (value) => (typeof value === 'string' ? value.trim() : value),
      z.pipe(
        z.string({ error: 'is required' }).check(z.minLength(1, { error: 'is required' }), atMost(254), noControlCharacters()),
        z.pipe(
          z.transform(toAsciiDomain),
          z.email({ pattern: EMAIL_PATTERN, error: 'must be a valid email address' }).check(
            lengthRule((email) => email.length <= 254, 'must be at most 254 characters'),
            lengthRule((email) => email.lastIndexOf('@') <= 64, 'must have at most 64 characters before the @'),
            lengthRule((email) => !/[^.]{64}/.test(domainOf(email)), 'must have at most 63 characters between the dots of its domain'),
          ),
        ),
      ),
    ),
    optInAttestation: preprocess(
      (value) => (typeof value === 'string' && checkedValues.includes(value.trim().toLowerCase()) ? true : value),
      z.literal(true, { error: 'must be true: the subscriber must confirm they opted in' }),
    ),
    source: optional(z.string({ error: 'must be text' }).check(atMost(160), noControlCharacters())),
    sourcePlatform: optional(z.enum(SOURCE_PLATFORMS, { error: `must be one of ${SOURCE_PLATFORMS.join(', ')}` })),
  });
}

export const SubscribeJsonInputSchema = createSubscribeInputSchema([]);
const SubscribeFormInputSchema = createSubscribeInputSchema(FORM_CHECKED_VALUES);
export const SUBSCRIBE_FIELDS: readonly string[] = Object.keys(SubscribeJsonInputSchema.shape);
export type SubscribeJsonInput = z.output<typeof SubscribeJsonInputSchema>;

export const SUBSCRIBE_FIELD_DOCS: { [Field in keyof SubscribeJsonInput]?: JsonSchemaWords } = {
  email: {
    format: 'email',
    description: 'Trimmed. RFC 5321 lengths (local part ≤ 64, labels ≤ 63), measured on the A-labels sent upstream.',
  },
  optInAttestation: { description: 'The subscriber confirmed they opted in; anything else is a 422 and nothing goes upstream.' },
  source: { description: 'A label; `SUBSCRIBE_DEFAULT_SOURCE` when absent.' },
};

const mediaTypeOf = (c: Context) => c.req.header('content-type')?.split(';')[0]?.trim().toLowerCase() ?? '';
export const isFormPost = (c: Context): boolean => FORM_TYPES.has(mediaTypeOf(c));

const bodyError = (message: string) => (): never => {
  throw new ApiError('VALIDATION_ERROR', { details: [{ path: '(body)', message }] });
};

export async function readSubscribeBody(c: Context): Promise<Record<string, unknown>> {
  if (isFormPost(c)) return c.req.parseBody().catch(bodyError('must be a valid form submission'));
  if (mediaTypeOf(c) !== 'application/json') throw new ApiError('UNSUPPORTED_MEDIA_TYPE');
  const parsed: unknown = await c.req.text().then(JSON.parse).catch(bodyError('must be valid JSON'));
  if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
  return bodyError('must be a JSON object')();
}

/** Own properties of the known fields only: `__proto__` and others are dropped. */
export function parseSubscribeFields(c: Context, input: Record<string, unknown>) {
  const picked = Object.fromEntries(SUBSCRIBE_FIELDS.filter((field) => Object.hasOwn(input, field)).map((field) => [field, input[field]]));
  const fields = parseOrThrow(isFormPost(c) ? SubscribeFormInputSchema : SubscribeJsonInputSchema, picked);
  return { ...fields, normalized: mailboxKeyOf(fields.email), domain: domainOf(fields.email) };
}

/** Providers known to deliver `j.a.n.e@` to `jane@`, each mapped to its one domain (docs/subscribe.md "Mailbox keys"). */
const DOTS_IGNORED: Readonly<Record<string, string>> = { 'gmail.com': 'gmail.com', 'googlemail.com': 'gmail.com' };

export const domainOf = (email: string): string => email.slice(email.lastIndexOf('@') + 1).toLowerCase();

/** For the repeat guard and the surge count (upstream gets the address as typed); RFC 5233 tags dropped. */
export function mailboxKeyOf(email: string): string {
  const local = email.slice(0, email.lastIndexOf('@')).toLowerCase();
  const untagged = local.indexOf('+') > 0 ? local.slice(0, local.indexOf('+')) : local;
  const unified = DOTS_IGNORED[domainOf(email)];
  return unified === undefined ? `${untagged}@${domainOf(email)}` : `${untagged.replaceAll('.', '')}@${unified}`;
}
