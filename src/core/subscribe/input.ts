import type { Context } from 'hono';
import * as z from '../zod.js';
import { ApiError } from '../http/errors.js';
import { SOURCE_PLATFORMS } from '../upstream/schemas.js';
import { blankToUndefined, parseOrThrow, preprocess, type JsonSchemaWords } from '../validation.js';

/** "A few KB" (docs/contract.md). */
export const SUBSCRIBE_MAX_BODY_BYTES = 8 * 1024;

const FORM_TYPES = new Set(['application/x-www-form-urlencoded', 'multipart/form-data']);
const ACCEPTED_TYPES = new Set(['application/json', ...FORM_TYPES]);
const NO_CONTROL_CHARACTERS = /^\P{Cc}*$/u;

/** What a ticked form checkbox may send for `optInAttestation` (trimmed, any case). */
export const FORM_CHECKED_VALUES = ['true', 'on', '1', 'yes'] as const;

/** zod's own `email` pattern, with an A-label top-level domain (`xn--p1ai`) allowed too. */
const EMAIL_PATTERN =
  /^(?:[A-Za-z0-9_'+-]+\.)*[A-Za-z0-9_'+-]*[A-Za-z0-9_+-]@(?:[A-Za-z0-9][A-Za-z0-9-]*\.)+(?:[A-Za-z]{2,}|xn--[A-Za-z0-9-]+)$/;
/** RFC 5321 §4.5.3.1. */
const [MAX_LOCAL_PART, MAX_DOMAIN_LABEL, MAX_ADDRESS] = [64, 63, 254];
const UNICODE_DOMAIN = /^[\p{L}\p{M}\p{N}.\u3002\uFF0E\uFF61-]+$/u;

/**
 * A Unicode domain as its A-labels (`bücher.example` → `xn--bcher-kva.example`) by the URL parser's
 * IDNA (both runtimes): the upstream takes ASCII, and limits apply to the A-labels. Else unchanged.
 */
function toAsciiDomain(value: string): string {
  if (/^[\x00-\x7F]*$/.test(value)) return value;
  const at = value.lastIndexOf('@');
  const domain = value.slice(at + 1);
  if (at < 1 || !UNICODE_DOMAIN.test(domain)) return value;
  try {
    const ascii = new URL(`http://${domain}/`).hostname;
    return /^[a-z0-9.-]+$/.test(ascii) ? `${value.slice(0, at)}@${ascii}` : value;
  } catch {
    return value;
  }
}

function lengthProblem(email: string): string | undefined {
  if (email.length > MAX_ADDRESS) return `must be at most ${MAX_ADDRESS} characters`;
  if (email.lastIndexOf('@') > MAX_LOCAL_PART) return `must have at most ${MAX_LOCAL_PART} characters before the @`;
  const labels = domainOf(email).split('.');
  if (labels.some((label) => label.length > MAX_DOMAIN_LABEL))
    return `must have at most ${MAX_DOMAIN_LABEL} characters between the dots of its domain`;
  return undefined;
}

/**
 * The one place a body field is written (validation, the type, openapi.json). Only the attestation
 * differs: JSON sends `true`, a ticked checkbox `on`. (zod's `stringbool` neither trims nor keeps our wording.)
 */
export function createSubscribeInputSchema(checkedValues: readonly string[]) {
  return z.object({
    email: preprocess(
      (value) => (typeof value === 'string' ? value.trim() : value),
      z.pipe(
        z
          .string({ error: 'is required' })
          .check(
            z.minLength(1, { error: 'is required' }),
            z.maxLength(MAX_ADDRESS, { error: `must be at most ${MAX_ADDRESS} characters` }),
            z.regex(NO_CONTROL_CHARACTERS, { error: 'must not contain control characters' }),
          ),
        z.pipe(
          z.transform((email: string) => toAsciiDomain(email)),
          z.email({ pattern: EMAIL_PATTERN, error: 'must be a valid email address' }).check(
            z.refine((email) => lengthProblem(email) === undefined, {
              error: (issue) => lengthProblem(String(issue.input)) ?? 'must be a valid email address',
              abort: true,
            }),
          ),
        ),
      ),
    ),
    optInAttestation: preprocess(
      (value) => (typeof value === 'string' && checkedValues.includes(value.trim().toLowerCase()) ? true : value),
      z.literal(true, { error: 'must be true: the subscriber must confirm they opted in' }),
    ),
    source: preprocess(
      blankToUndefined,
      z.optional(
        z
          .string({ error: 'must be text' })
          .check(
            z.maxLength(160, { error: 'must be at most 160 characters' }),
            z.regex(NO_CONTROL_CHARACTERS, { error: 'must not contain control characters' }),
          ),
      ),
    ),
    sourcePlatform: preprocess(
      blankToUndefined,
      z.optional(z.enum(SOURCE_PLATFORMS, { error: `must be one of ${SOURCE_PLATFORMS.join(', ')}` })),
    ),
  });
}

export const SubscribeJsonInputSchema = createSubscribeInputSchema([]);
const SubscribeFormInputSchema = createSubscribeInputSchema(FORM_CHECKED_VALUES);

/** openapi.json's words for the body's fields. */
export const SUBSCRIBE_FIELD_DOCS: { [Field in keyof SubscribeJsonInput]?: JsonSchemaWords } = {
  email: {
    format: 'email',
    description:
      'Trimmed before it is checked. RFC 5321 lengths: a local part of at most 64 characters, domain labels of at most 63. A domain in Unicode is accepted and sent upstream as its A-labels, which are what is measured.',
  },
  optInAttestation: { description: 'The subscriber confirmed they opted in; anything else is a 422 and nothing goes upstream.' },
  source: { description: 'A label; `SUBSCRIBE_DEFAULT_SOURCE` when absent.' },
};

export const SUBSCRIBE_FIELDS: readonly string[] = Object.keys(SubscribeJsonInputSchema.shape);

/** The JSON body `hc<AppType>` sends. */
export type SubscribeJsonInput = z.output<typeof SubscribeJsonInputSchema>;

/** The fields, validated, with the address's mailbox key (mailboxKeyOf) and domain. */
export type SubscribeFields = SubscribeJsonInput & { normalized: string; domain: string };

const mediaTypeOf = (c: Context) => c.req.header('content-type')?.split(';')[0]?.trim().toLowerCase() ?? '';

/** An HTML form post can get a 303 instead of JSON. */
export function isFormPost(c: Context): boolean {
  return FORM_TYPES.has(mediaTypeOf(c));
}

/** A catch handler: whatever reading the body threw, the visitor is told this. */
const bodyError = (message: string) => (): never => {
  throw new ApiError('VALIDATION_ERROR', { details: [{ path: '(body)', message }] });
};

/** JSON, a urlencoded or a multipart form; anything else is a 415. */
export async function readSubscribeBody(c: Context): Promise<Record<string, unknown>> {
  const mediaType = mediaTypeOf(c);
  if (!ACCEPTED_TYPES.has(mediaType)) throw new ApiError('UNSUPPORTED_MEDIA_TYPE');
  if (mediaType !== 'application/json') return c.req.parseBody().catch(bodyError('must be a valid form submission'));
  const parsed: unknown = await c.req.text().then(JSON.parse).catch(bodyError('must be valid JSON'));
  if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
  return bodyError('must be a JSON object')();
}

/** Throws VALIDATION_ERROR. Own properties of the known fields only: `__proto__` and others are dropped. */
export function parseSubscribeFields(c: Context, input: Record<string, unknown>): SubscribeFields {
  const picked: Record<string, unknown> = Object.create(null);
  for (const field of SUBSCRIBE_FIELDS) if (Object.hasOwn(input, field)) picked[field] = input[field];
  const fields = parseOrThrow(isFormPost(c) ? SubscribeFormInputSchema : SubscribeJsonInputSchema, picked);
  return { ...fields, normalized: mailboxKeyOf(fields.email), domain: domainOf(fields.email) };
}

/*
 * One key per mailbox, for the repeat guard and the surge count (docs/subscribe.md "Mailbox keys");
 * what goes upstream stays as typed.
 */

/** Providers known to deliver `j.a.n.e@` to `jane@`, each mapped to its one domain. */
const DOTS_IGNORED: Readonly<Record<string, string>> = { 'gmail.com': 'gmail.com', 'googlemail.com': 'gmail.com' };

export function domainOf(email: string): string {
  return email.slice(email.lastIndexOf('@') + 1).toLowerCase();
}

/** Lower-cased, a `+tag` dropped (RFC 5233), and for providers that ignore dots, dots dropped and the domain unified. */
export function mailboxKeyOf(email: string): string {
  const local = email.slice(0, email.lastIndexOf('@')).toLowerCase();
  const plus = local.indexOf('+');
  // A local part that is only a tag (`+x@`) is kept whole.
  const untagged = plus > 0 ? local.slice(0, plus) : local;
  const unified = DOTS_IGNORED[domainOf(email)];
  return unified === undefined ? `${untagged}@${domainOf(email)}` : `${untagged.replaceAll('.', '')}@${unified}`;
}
