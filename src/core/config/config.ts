import * as z from '../zod.js';
import { SUBSCRIBER_SOURCE_TYPES } from '../upstream/schemas.js';
import { DEFAULT_LIST_PAGING, LIST_ISSUES_MAX_ROWS, LIST_ISSUES_PAGE_PARAM } from '../upstream/assumptions.js';
import { parseHttpUrl } from '../http/origins.js';
import { parseAddressList } from '../http/ip-address.js';
import { SUBSCRIBE_FIELDS } from '../subscribe/input.js';
import { MIN_API_KEY_LENGTH, createRedactor } from '../log.js';
import { atMost, blankToUndefined, optional, preprocess, wholeNumber } from '../validation.js';

const MIB = 1024 * 1024;
export const SLUG_PLACEHOLDER = '{slug}';
/** Never echoed: a webhook's or a build hook's URL is its credential. */
const SECRET_VARIABLES = new Set(['NEWSLETTER_API_KEY', 'TURNSTILE_SECRET_KEY', 'ALERT_WEBHOOK_URL', 'DEPLOY_HOOK_URL']);
export const secretsOf = (source: ConfigSource) => [...SECRET_VARIABLES].map((name) => source[name]);
const HTTPS_ONLY = 'must be an https URL (plain http is accepted only for a loopback host)';
const HOST_NAME = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/i;

/** Plain http only to this machine (a local fake); fetch refuses a URL that carries a user or password. */
function isHttpsOrLoopback(url: URL | undefined, withoutUser = false): boolean {
  const loopback = url?.hostname === 'localhost' || url?.hostname === '[::1]' || /^127(?:\.\d{1,3}){3}$/.test(url?.hostname ?? '');
  const secure = url?.protocol === 'https:' || (url?.protocol === 'http:' && loopback);
  return secure && !(withoutUser && (url.username || url.password));
}

function isRedisUrl(value: string): boolean {
  const url = URL.parse(value);
  return (url?.protocol === 'redis:' || url?.protocol === 'rediss:') && url.hostname !== '' && !url.search && !url.hash;
}

const withDefault = <S extends z.ZodMiniType>(schema: S, fallback: z.core.util.NoUndefined<z.output<S>>) =>
  preprocess(blankToUndefined, z._default(schema, fallback));

const bindingText = (value: unknown): unknown => {
  const given = blankToUndefined(value);
  return typeof given === 'number' || typeof given === 'boolean' ? String(given) : given;
};

const count = (min: number, max: number, fallback: number) => wholeNumber(min, max, fallback, bindingText);

function oneOf<const Values extends readonly [string, ...string[]]>(values: Values, fallback: Values[number]) {
  const error = values.length === 2 ? `must be ${values[0]} or ${values[1]}` : `must be one of ${values.join(', ')}`;
  return withDefault(z.enum(values, { error }), fallback);
}

const satisfying = (test: (value: string) => boolean, error: string) => z.string({ error }).check(z.refine(test, { error }));
const httpsUrl = (error: string, withoutUser = false) => satisfying((value) => isHttpsOrLoopback(parseHttpUrl(value), withoutUser), error);
const queryParameterName = z.string().check(
  z.regex(/^[A-Za-z][A-Za-z0-9_.[\]-]{0,63}$/, { error: 'must be a query parameter name (letters, digits, _ . - [ ])' }),
  z.refine((value) => value !== 'status' && value !== 'isPublic', { error: 'must not be status or isPublic' }),
);

const fail = (line: string): never => {
  throw new Error(line);
};

// The parsers below throw only through `fail`: its line becomes the variable's problem.
function parsed<T>(parse: (value: string) => T, typeError: string) {
  return z.pipe(
    z.string({ error: typeError }),
    z.transform((value: string, ctx) => {
      try {
        return parse(value);
      } catch (error) {
        ctx.issues.push({ code: 'custom', message: (error as Error).message, input: value });
        return z.NEVER;
      }
    }),
  );
}

function parseBaseUrl(value: string): string {
  const url = URL.parse(value) ?? fail('must be an absolute URL such as https://api.example.com/v1');
  const path = url.pathname.replace(/\/+$/, '');
  if (!isHttpsOrLoopback(url)) return fail('must use https (plain http is accepted only for a loopback host)');
  if (url.username || url.password || url.search || url.hash) return fail('must not carry credentials, a query or a fragment');
  return path.endsWith('/v1') ? `${url.origin}${path}` : fail('must end in /v1');
}

function parseOrigins(value: string): '*' | readonly string[] {
  const entries = value.split(',').flatMap((entry) => entry.trim() || []);
  if (entries.includes('*')) return entries.length > 1 ? fail('must be either * alone or a list of origins') : '*';
  const invalid = entries.filter((entry) => parseHttpUrl(entry)?.origin !== entry);
  if (invalid.length === 0) return entries;
  return fail(`has entries that are not origins (scheme://host[:port], no path or trailing slash): ${invalid.join(', ')}`);
}

function parsePublicBaseUrl(value: string): string {
  const url = parseHttpUrl(value);
  if (url && !url.username && !url.password && !url.search && !url.hash) return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
  return fail('must be an absolute http(s) URL without a query or fragment, such as https://news-api.example.com');
}

const apiKey = z
  .string({ error: 'must be a string' })
  .check(
    z.regex(/^[\x21-\x7e]+$/, { error: 'must be printable ASCII with no spaces' }),
    z.minLength(MIN_API_KEY_LENGTH, { error: `is shorter than ${MIN_API_KEY_LENGTH} characters (was all of it copied?)` }),
    z.maxLength(4096, { error: 'is longer than 4096 characters' }),
  );
// A bare IPv6 address has two colons at least: `127.0.0.1:8787` is refused.
const isListenHost = (host: string) => HOST_NAME.test(host) || (/:.*:/.test(host) && /^[0-9a-f:.]{2,45}$/i.test(host));
const listenHost = withDefault(satisfying(isListenHost, 'must be a host name or an IP address'), '127.0.0.1');
const honeypotField = z.string().check(
  z.regex(/^[A-Za-z][A-Za-z0-9_-]{0,63}$/, { error: 'must be a simple field name (letters, digits, _ or -)' }),
  z.refine((value) => !SUBSCRIBE_FIELDS.includes(value), { error: 'must not be one of the real form fields' }),
);
function parseProxies(value: string) {
  const { list, invalid } = parseAddressList(value);
  if (invalid.length === 0) return list;
  return fail(`has entries that are not addresses, CIDR networks or loopback/linklocal/uniquelocal: ${invalid.join(', ')}`);
}
// Only text (a Worker's boolean binding as text) is read: `null` or a list is refused, not read as its String().
const flagText = (value: unknown) => {
  const text = bindingText(value);
  return text === undefined ? 'false' : typeof text === 'string' ? text.toLowerCase() : text;
};
const flag = z.pipe(
  preprocess(flagText, z.enum(['true', 'false'], { error: 'must be true or false' })),
  z.transform((text) => text === 'true'),
);
const siteIssueUrl = z.string().check(
  z.refine((value) => value.includes(SLUG_PLACEHOLDER), { error: `must contain ${SLUG_PLACEHOLDER}, where the issue's slug goes` }),
  z.refine((value) => parseHttpUrl(value.replaceAll(SLUG_PLACEHOLDER, 'slug')) !== undefined, {
    error: 'must be an absolute http(s) URL such as https://www.example.com/issues/{slug}/',
  }),
);
const absoluteUrl = satisfying((value) => parseHttpUrl(value) !== undefined, 'must be an absolute http(s) URL');
const TURNSTILE_VERIFY_URL = 'https://challenges.cloudflare.com/turnstile/v0/siteverify';
const siteKey = satisfying((value) => /^[\w-]{1,256}$/.test(value), 'must be a site key (letters, digits, _ or -)');

/** Each variable of docs/configuration.md: its Config field (null: see derivedFields) and rule. Blank, or a fallback of 0, is unset. */
const VARIABLES = {
  NEWSLETTER_API_KEY: ['apiKey', optional(apiKey)],
  NEWSLETTER_API_BASE_URL: ['apiBaseUrl', optional(parsed(parseBaseUrl, 'must be a URL'))],
  ALLOWED_ORIGINS: ['allowedOrigins', withDefault(parsed(parseOrigins, 'must be a comma-separated list of origins'), [])],
  PORT: ['port', count(1, 65535, 8787)],
  HOST: ['host', listenHost],
  CACHE_TTL_SECONDS: ['cacheTtlSeconds', count(1, 86_400, 60)],
  CATEGORIES_TTL_SECONDS: [null, count(1, 86_400, 0)],
  CACHE_MAX_BYTES: ['cacheMaxBytes', count(MIB, 4096 * MIB, 64 * MIB)],
  NOT_FOUND_CACHE_TTL_SECONDS: ['notFoundTtlSeconds', count(1, 3600, 30)],
  ARCHIVE_MAX_ISSUES: ['archiveMaxIssues', count(200, 100_000, 5000)],
  UPSTREAM_TIMEOUT_MS: ['upstreamTimeoutMs', count(100, 60_000, 8000)],
  SUBSCRIBE_RATE_LIMIT_PER_MINUTE: ['subscribeRateLimitPerMinute', count(1, 10_000, 10)],
  SUBSCRIBE_SOURCE_TYPE: ['subscribeSourceType', oneOf(SUBSCRIBER_SOURCE_TYPES, 'embed')],
  SUBSCRIBE_DEFAULT_SOURCE: ['subscribeDefaultSource', withDefault(z.string().check(atMost(160)), 'website')],
  SUBSCRIBE_REDIRECT_URL: ['subscribeRedirectUrl', optional(absoluteUrl)],
  SUBSCRIBE_HONEYPOT_FIELD: ['honeypotField', withDefault(honeypotField, 'website')],
  MAX_CONNECTIONS: ['maxConnections', count(16, 1_000_000, 4096)],
  MAX_CONNECTIONS_PER_CLIENT: [null, count(1, 1_000_000, 0)],
  HEADERS_TIMEOUT_SECONDS: [null, count(1, 15, 10)],
  REQUEST_TIMEOUT_SECONDS: [null, count(1, 30, 30)],
  TRUST_PROXY_HOPS: ['trustProxyHops', count(0, 10, 0)],
  RATE_LIMIT_IPV6_PREFIX: ['rateLimitIpv6Prefix', count(32, 128, 64)],
  TRUSTED_PROXIES: ['trustedProxies', optional(parsed(parseProxies, 'must be a comma-separated list of addresses or CIDR networks'))],
  TURNSTILE_SECRET_KEY: ['turnstileSecretKey', optional(z.string())],
  TURNSTILE_SITE_KEY: ['turnstileSiteKey', optional(siteKey)],
  TURNSTILE_VERIFY_URL: ['turnstileVerifyUrl', withDefault(httpsUrl(HTTPS_ONLY), TURNSTILE_VERIFY_URL)],
  TURNSTILE_MODE: ['turnstileMode', oneOf(['always', 'surge'], 'always')],
  SUBSCRIBE_SURGE_PER_MINUTE: ['subscribeSurgePerMinute', count(0, 100_000, 30)],
  SUBSCRIBE_SURGE_SECONDS: ['subscribeSurgeSeconds', count(10, 86_400, 600)],
  SUBSCRIBE_BLOCK_DISPOSABLE: ['subscribeBlockDisposable', flag],
  ALERT_WEBHOOK_URL: ['alertWebhookUrl', optional(httpsUrl(HTTPS_ONLY))],
  ARCHIVE_RESYNC_SECONDS: ['archiveResyncSeconds', count(10, 86_400, 600)],
  INDEX_REFRESH_MIN_SECONDS: ['indexRefreshMinSeconds', count(0, 300, 5)],
  READ_BUDGET_PER_MINUTE: ['readBudgetPerMinute', count(1, 100_000, 120)],
  READ_BUDGET_PER_CLIENT_PER_MINUTE: ['readBudgetPerClientPerMinute', count(1, 100_000, 30)],
  DEPLOY_HOOK_URL: ['deployHookUrl', optional(httpsUrl(`${HTTPS_ONLY}, without a user or password`, true))],
  REDIS_URL: ['redisUrl', optional(satisfying(isRedisUrl, 'must be a redis:// or rediss:// URL with a host'))],
  REDIS_TIMEOUT_MS: ['redisTimeoutMs', count(10, 5000, 100)],
  SITE_ISSUE_URL: ['siteIssueUrl', optional(siteIssueUrl)],
  PUBLICATION_NAME: ['publicationName', optional(z.string().check(atMost(200)))],
  PUBLIC_BASE_URL: ['publicBaseUrl', optional(parsed(parsePublicBaseUrl, 'must be a URL'))],
  NODE_ENV: [null, optional(z.string())],
  UPSTREAM_LIST_LIMIT_PARAM: [null, withDefault(queryParameterName, DEFAULT_LIST_PAGING.limitParam)],
  UPSTREAM_LIST_PAGING: [null, oneOf(['offset', 'page'], DEFAULT_LIST_PAGING.style)],
  UPSTREAM_LIST_PAGING_PARAM: [null, optional(queryParameterName)],
  UPSTREAM_LIST_PAGE_SIZE: [null, count(1, LIST_ISSUES_MAX_ROWS, DEFAULT_LIST_PAGING.pageSize)],
  ADMIN_PORT: [null, count(1, 65535, 0)],
  ADMIN_HOST: ['adminHost', listenHost],
  ADMIN_UNREADY_AFTER_SECONDS: ['adminUnreadyAfterSeconds', count(1, 3600, 60)],
  ACCESS_LOG: ['accessLog', oneOf(['summary', 'all'], 'summary')],
} as const;

type Variables = typeof VARIABLES;
const ConfigSchema = z.object(
  Object.fromEntries(Object.entries(VARIABLES).map(([name, [, rule]]) => [name, rule])) as {
    -readonly [Name in keyof Variables]: Variables[Name][1];
  },
);
type Env = z.output<typeof ConfigSchema>;

type DirectFields = { -readonly [Name in keyof Variables as Variables[Name][0] & string]: Env[Name] };
export type Config = DirectFields & ReturnType<typeof derivedFields>;

export type ConfigResult = { ok: true; config: Config; notices: string[] } | { ok: false; problems: string[] };

export type ConfigSource = Readonly<Record<string, unknown>>;

export const CONFIG_VARIABLES: readonly string[] = Object.keys(ConfigSchema.shape);

const NO_LONGER_PER_CLIENT =
  'MAX_CONNECTIONS_PER_CLIENT is no longer used: one address may open as many connections as fit (docs/node-http.md)';

const pagingParamOf = (env: Env): string =>
  env.UPSTREAM_LIST_PAGING_PARAM ?? (env.UPSTREAM_LIST_PAGING === 'page' ? LIST_ISSUES_PAGE_PARAM : DEFAULT_LIST_PAGING.pagingParam);

/** Rules across variables, once each is valid alone: each line is the problem of the variable it starts with. */
const CROSS_RULES: [line: string, broken: (env: Env) => boolean][] = [
  ['REQUEST_TIMEOUT_SECONDS must be at least HEADERS_TIMEOUT_SECONDS', (env) => env.REQUEST_TIMEOUT_SECONDS < env.HEADERS_TIMEOUT_SECONDS],
  ['UPSTREAM_LIST_PAGING_PARAM must differ from UPSTREAM_LIST_LIMIT_PARAM', (env) => env.UPSTREAM_LIST_LIMIT_PARAM === pagingParamOf(env)],
  [
    'TURNSTILE_MODE=surge needs TURNSTILE_SECRET_KEY and TURNSTILE_SITE_KEY',
    (env) => env.TURNSTILE_MODE === 'surge' && !(env.TURNSTILE_SECRET_KEY && env.TURNSTILE_SITE_KEY),
  ],
  ['TRUSTED_PROXIES must not be set with TRUST_PROXY_HOPS', (env) => env.TRUSTED_PROXIES !== undefined && env.TRUST_PROXY_HOPS > 0],
  ['ADMIN_PORT must differ from PORT', (env) => env.ADMIN_PORT === env.PORT],
];

/** From Node's `process.env` or a Worker's `env`. Pure: reports every problem at once, one line per variable, never a value. */
export function parseConfig(source: ConfigSource): ConfigResult {
  const result = ConfigSchema.safeParse(source);
  const problems = new Map<string, string>();
  for (const issue of result.error?.issues ?? []) {
    const name = String(issue.path[0] ?? 'configuration');
    if (!problems.has(name)) problems.set(name, `${name} ${issue.message}`);
  }
  const problem = (line: string) => problems.set(line.split(/[ =]/)[0]!, line);
  // On the raw values, so they are reported even when another variable is invalid.
  const hasKey = blankToUndefined(source.NEWSLETTER_API_KEY) !== undefined;
  const hasBaseUrl = blankToUndefined(source.NEWSLETTER_API_BASE_URL) !== undefined;
  if (!hasKey && blankToUndefined(source.NODE_ENV) === 'production') problem('NEWSLETTER_API_KEY is required when NODE_ENV=production');
  else if (!hasKey && hasBaseUrl) problem('NEWSLETTER_API_KEY is required when NEWSLETTER_API_BASE_URL is set (unset both for the demo)');
  if (hasKey && !hasBaseUrl) problem('NEWSLETTER_API_BASE_URL is required when NEWSLETTER_API_KEY is set');
  const env = result.data;
  for (const [line, broken] of CROSS_RULES) if (env && broken(env)) problem(line);
  if (!env || problems.size > 0) {
    // A secret pasted into another variable is not echoed; a secret's own lines are our wording only.
    const redact = createRedactor(secretsOf(source));
    return { ok: false, problems: [...problems].map(([name, line]) => (SECRET_VARIABLES.has(name) ? line : redact(line))) };
  }
  const direct = Object.entries(VARIABLES).filter(([, [field]]) => field !== null);
  const fields = Object.fromEntries(direct.map(([name, [field]]) => [field, env[name as keyof Env]])) as DirectFields;
  const config: Config = { ...fields, ...derivedFields(env) };
  return { ok: true, config, notices: env.MAX_CONNECTIONS_PER_CLIENT === 0 ? [] : [NO_LONGER_PER_CLIENT] };
}

function derivedFields(env: Env) {
  return {
    mode: env.NEWSLETTER_API_KEY ? ('upstream' as const) : ('demo' as const),
    categoriesTtlSeconds: env.CATEGORIES_TTL_SECONDS === 0 ? env.CACHE_TTL_SECONDS : env.CATEGORIES_TTL_SECONDS,
    headersTimeoutMs: env.HEADERS_TIMEOUT_SECONDS * 1000,
    requestTimeoutMs: env.REQUEST_TIMEOUT_SECONDS * 1000,
    listPaging: {
      limitParam: env.UPSTREAM_LIST_LIMIT_PARAM,
      style: env.UPSTREAM_LIST_PAGING,
      pagingParam: pagingParamOf(env),
      pageSize: env.UPSTREAM_LIST_PAGE_SIZE,
    },
    adminPort: env.ADMIN_PORT === 0 ? undefined : env.ADMIN_PORT,
  };
}
