import type { AccessLogMode } from '../http/access-log.js';
import * as z from '../zod.js';
import { SUBSCRIBER_SOURCE_TYPES } from '../upstream/schemas.js';
import type { ListPaging } from '../upstream/archive.js';
import { DEFAULT_LIST_PAGING, LIST_ISSUES_PAGE_PARAM } from '../upstream/assumptions.js';
import { parseHttpUrl } from '../http/origins.js';
import { SUBSCRIBE_FIELDS } from '../subscribe/input.js';
import {
  ARCHIVE_READ_VARIABLES,
  CHALLENGE_VARIABLES,
  CLIENT_ADDRESS_VARIABLES,
  DEPLOY_HOOK_VARIABLES,
  NODE_LISTENER_VARIABLES,
  SHARED_STATE_VARIABLES,
  SUBSCRIBE_SURGE_VARIABLES,
  UPSTREAM_PAGING_VARIABLES,
  isHttpsOrLoopback,
  isListenHost,
  optionalText,
  wholeNumberVariable,
} from './variables.js';
import type { AddressList } from '../http/ip-address.js';
import { MIN_API_KEY_LENGTH, createRedactor } from '../redact.js';
import { addIssue, blankToUndefined, preprocess } from '../validation.js';

/** The parsed configuration: every variable of docs/configuration.md. */
export interface Config {
  /** `upstream` talks to the configured service; `demo` to the embedded sample publication. */
  mode: 'upstream' | 'demo';
  apiKey: string | undefined;
  /** Upstream root without a trailing slash, ending in `/v1`. */
  apiBaseUrl: string | undefined;
  /** `'*'` allows any origin; otherwise exact origins (`https://example.com`). */
  allowedOrigins: '*' | readonly string[];
  port: number;
  host: string;
  cacheTtlSeconds: number;
  cacheMaxBytes: number;
  notFoundTtlSeconds: number;
  archiveMaxIssues: number;
  upstreamTimeoutMs: number;
  subscribeRateLimitPerMinute: number;
  subscribeSourceType: (typeof SUBSCRIBER_SOURCE_TYPES)[number];
  subscribeDefaultSource: string;
  subscribeRedirectUrl: string | undefined;
  honeypotField: string;
  trustProxyHops: number;
  /** Node's listener limits, the IPv6 prefix counted as one visitor, Turnstile (off without a secret). */
  maxConnections: number;
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  rateLimitIpv6Prefix: number;
  turnstileSecretKey: string | undefined;
  turnstileSiteKey: string | undefined;
  turnstileVerifyUrl: string;
  /** Surges of subscribe attempts (docs/subscribe.md): 0 per minute turns detection off. */
  subscribeSurgePerMinute: number;
  subscribeSurgeSeconds: number;
  /** `always`: every subscribe needs a token; `surge`: only during a surge. */
  turnstileMode: 'always' | 'surge';
  subscribeBlockDisposable: boolean;
  alertWebhookUrl: string | undefined;
  /** Proxies whose X-Forwarded-For is read (TRUSTED_PROXIES); TRUST_PROXY_HOPS applies without it. */
  trustedProxies: AddressList | undefined;
  /** Cold upstream reads per minute for all visitors, and for one client IP (docs/contract.md "Availability under abuse"). */
  readBudgetPerMinute: number;
  readBudgetPerClientPerMinute: number;
  /** Shortest time between two archive index refreshes that a slug missing from it may cause. */
  indexRefreshMinSeconds: number;
  /** How often the archive is read whole when refreshes read only its head (catches edits and unpublished issues). */
  archiveResyncSeconds: number;
  /** A build hook POSTed once per change of the archive, which is then watched without visitors; none when unset. */
  deployHookUrl: string | undefined;
  /** Redis shared by several Node instances (limits, guards, a cache tier); none when unset. */
  redisUrl: string | undefined;
  /** Every Redis command's timeout: slower counts as an outage, and memory takes over. */
  redisTimeoutMs: number;
  /** An issue's public page with `{slug}` in it; feeds of the archive route are off without it. */
  siteIssueUrl: string | undefined;
  /** The publication's name: the feeds' title and author (the site's host when unset). */
  publicationName: string | undefined;
  /** Where this service is reached publicly, without a trailing slash: the feeds' absolute `self` link (none when unset). */
  publicBaseUrl: string | undefined;
  /** How List Issues pages (UPSTREAM_LIST_*): the guesses of docs/upstream.md "Assumptions" by default. */
  listPaging: ListPaging;
  /** Node only: the admin listener (/healthz, /readyz, /metrics); none when unset. */
  adminPort: number | undefined;
  adminHost: string;
  /** /readyz answers 503 once every upstream call has failed for this long. */
  adminUnreadyAfterSeconds: number;
  /** Node only: a `request` line for every request (`all`), or the fast path's fresh hits counted into a summary (core/http/access-log.ts). */
  accessLog: AccessLogMode;
}

/**
 * `notices`: lines for the log at start-up about a setting that is accepted but no longer does
 * what its name says (the configuration still starts).
 */
export type ConfigResult = { ok: true; config: Config; notices: string[] } | { ok: false; problems: string[] };

/** Environment variables arrive as strings (Node) or as Worker bindings of any type. */
export type ConfigSource = Readonly<Record<string, unknown>>;

const MIB = 1024 * 1024;
/** Where SITE_ISSUE_URL takes the issue's slug. */
export const SLUG_PLACEHOLDER = '{slug}';
const SECRET_VARIABLES = new Set(['NEWSLETTER_API_KEY', 'TURNSTILE_SECRET_KEY', 'ALERT_WEBHOOK_URL', 'DEPLOY_HOOK_URL']);

const ConfigSchema = z.object({
  // Validated for shape only; its value never appears in a message (docs/contract.md: never echo the secret).
  NEWSLETTER_API_KEY: preprocess(
    blankToUndefined,
    z.optional(
      z
        .string({ error: 'must be a string' })
        .check(
          z.regex(/^[\x21-\x7e]+$/, { error: 'must be printable ASCII with no spaces' }),
          z.minLength(MIN_API_KEY_LENGTH, { error: `is shorter than ${MIN_API_KEY_LENGTH} characters (was all of it copied?)` }),
          z.maxLength(4096, { error: 'is longer than 4096 characters' }),
        ),
    ),
  ),
  NEWSLETTER_API_BASE_URL: preprocess(
    blankToUndefined,
    z.optional(
      z.pipe(
        z.string({ error: 'must be a URL' }),
        z.transform((value: string, ctx) => {
          let url: URL;
          try {
            url = new URL(value);
          } catch {
            addIssue(ctx, 'must be an absolute URL such as https://api.example.com/v1');
            return z.NEVER;
          }
          const path = url.pathname.replace(/\/+$/, '');
          if (!isHttpsOrLoopback(url)) {
            addIssue(ctx, 'must use https (plain http is accepted only for a loopback host)');
          } else if (url.username || url.password || url.search || url.hash) {
            addIssue(ctx, 'must not carry credentials, a query or a fragment');
          } else if (!path.endsWith('/v1')) {
            addIssue(ctx, 'must end in /v1');
          }
          return `${url.origin}${path}`;
        }),
      ),
    ),
  ),
  ALLOWED_ORIGINS: preprocess(
    blankToUndefined,
    z._default(
      z.pipe(
        z.string({ error: 'must be a comma-separated list of origins' }),
        z.transform((value: string, ctx): '*' | string[] => {
          const entries = value
            .split(',')
            .map((entry) => entry.trim())
            .filter(Boolean);
          if (entries.includes('*')) {
            if (entries.length > 1) addIssue(ctx, 'must be either * alone or a list of origins');
            return '*';
          }
          // An origin is scheme + host [+ port]: a path, query, userinfo or trailing slash means a typo.
          const invalid = entries.filter((entry) => parseHttpUrl(entry)?.origin !== entry);
          if (invalid.length > 0) {
            addIssue(ctx, `has entries that are not origins (scheme://host[:port], no path or trailing slash): ${invalid.join(', ')}`);
          }
          return entries;
        }),
      ),
      [],
    ),
  ),
  PORT: wholeNumberVariable(1, 65535, 8787),
  HOST: preprocess(
    blankToUndefined,
    z._default(
      z.string().check(z.refine(isListenHost, { error: 'must be a host name or an IP address (such as 127.0.0.1, 0.0.0.0 or ::)' })),
      '127.0.0.1',
    ),
  ),
  CACHE_TTL_SECONDS: wholeNumberVariable(1, 86_400, 60),
  CACHE_MAX_BYTES: wholeNumberVariable(MIB, 4096 * MIB, 64 * MIB),
  NOT_FOUND_CACHE_TTL_SECONDS: wholeNumberVariable(1, 3600, 30),
  ARCHIVE_MAX_ISSUES: wholeNumberVariable(200, 100_000, 5000),
  UPSTREAM_TIMEOUT_MS: wholeNumberVariable(100, 60_000, 8000),
  SUBSCRIBE_RATE_LIMIT_PER_MINUTE: wholeNumberVariable(1, 10_000, 10),
  SUBSCRIBE_SOURCE_TYPE: preprocess(
    blankToUndefined,
    z._default(z.enum(SUBSCRIBER_SOURCE_TYPES, { error: `must be one of ${SUBSCRIBER_SOURCE_TYPES.join(', ')}` }), 'embed'),
  ),
  SUBSCRIBE_DEFAULT_SOURCE: preprocess(
    blankToUndefined,
    z._default(z.string().check(z.maxLength(160, { error: 'must be at most 160 characters' })), 'website'),
  ),
  SUBSCRIBE_REDIRECT_URL: preprocess(
    blankToUndefined,
    z.optional(z.string().check(z.refine((value) => parseHttpUrl(value) !== undefined, { error: 'must be an absolute http(s) URL' }))),
  ),
  SUBSCRIBE_HONEYPOT_FIELD: preprocess(
    blankToUndefined,
    z._default(
      z.string().check(
        z.regex(/^[A-Za-z][A-Za-z0-9_-]{0,63}$/, { error: 'must be a simple field name (letters, digits, _ or -)' }),
        z.refine((value) => !SUBSCRIBE_FIELDS.includes(value), { error: 'must not be one of the real form fields' }),
      ),
      'website',
    ),
  ),
  ...NODE_LISTENER_VARIABLES,
  ...CLIENT_ADDRESS_VARIABLES,
  ...CHALLENGE_VARIABLES,
  ...SUBSCRIBE_SURGE_VARIABLES,
  ...ARCHIVE_READ_VARIABLES,
  ...DEPLOY_HOOK_VARIABLES,
  ...SHARED_STATE_VARIABLES,
  SITE_ISSUE_URL: preprocess(
    blankToUndefined,
    z.optional(
      z.string().check(
        z.refine((value) => value.includes(SLUG_PLACEHOLDER), { error: `must contain ${SLUG_PLACEHOLDER}, where the issue's slug goes` }),
        z.refine((value) => parseHttpUrl(value.replaceAll(SLUG_PLACEHOLDER, 'slug')) !== undefined, {
          error: 'must be an absolute http(s) URL such as https://www.example.com/issues/{slug}/',
        }),
      ),
    ),
  ),
  PUBLICATION_NAME: preprocess(
    blankToUndefined,
    z.optional(z.string().check(z.maxLength(200, { error: 'must be at most 200 characters' }))),
  ),
  PUBLIC_BASE_URL: preprocess(
    blankToUndefined,
    z.optional(
      z.pipe(
        z.string(),
        z.transform((value: string, ctx) => {
          const url = parseHttpUrl(value);
          if (!url || url.username || url.password || url.search || url.hash) {
            addIssue(ctx, 'must be an absolute http(s) URL without a query or fragment, such as https://news-api.example.com');
            return z.NEVER;
          }
          return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
        }),
      ),
    ),
  ),
  NODE_ENV: optionalText(),
  ...UPSTREAM_PAGING_VARIABLES,
  // 0 stands for "unset" (the default is not validated): no admin listener.
  ADMIN_PORT: wholeNumberVariable(1, 65535, 0),
  ADMIN_HOST: preprocess(
    blankToUndefined,
    z._default(
      z.string().check(z.refine(isListenHost, { error: 'must be a host name or an IP address (such as 127.0.0.1 or ::1)' })),
      '127.0.0.1',
    ),
  ),
  ADMIN_UNREADY_AFTER_SECONDS: wholeNumberVariable(1, 3600, 60),
  ACCESS_LOG: preprocess(blankToUndefined, z._default(z.enum(['summary', 'all'], { error: 'must be summary or all' }), 'summary')),
});

/** Every variable the configuration reads (docs/configuration.md has a row for each). */
export const CONFIG_VARIABLES: readonly string[] = Object.keys(ConfigSchema.shape);

/**
 * Parses configuration from a plain map (Node's `process.env` or a Worker's `env`).
 * Pure: reports every problem at once, one line per variable, and never echoes a value.
 */
export function parseConfig(source: ConfigSource): ConfigResult {
  const result = ConfigSchema.safeParse(source);
  const problems = new Map<string, string>();
  for (const issue of result.error?.issues ?? []) {
    const name = String(issue.path[0] ?? 'configuration');
    if (!problems.has(name)) problems.set(name, `${name} ${issue.message}`);
  }
  // Checked on the raw values so they are reported even when another variable is invalid.
  const hasKey = blankToUndefined(source.NEWSLETTER_API_KEY) !== undefined;
  const hasBaseUrl = blankToUndefined(source.NEWSLETTER_API_BASE_URL) !== undefined;
  const production = blankToUndefined(source.NODE_ENV) === 'production';
  if (!hasKey && production) {
    problems.set('NEWSLETTER_API_KEY', 'NEWSLETTER_API_KEY is required when NODE_ENV=production');
  } else if (!hasKey && hasBaseUrl) {
    problems.set('NEWSLETTER_API_KEY', 'NEWSLETTER_API_KEY is required when NEWSLETTER_API_BASE_URL is set (unset both to run the demo)');
  }
  if (hasKey && !hasBaseUrl) {
    problems.set('NEWSLETTER_API_BASE_URL', 'NEWSLETTER_API_BASE_URL is required when NEWSLETTER_API_KEY is set');
  }
  const parsed = result.data;
  if (parsed && parsed.REQUEST_TIMEOUT_SECONDS < parsed.HEADERS_TIMEOUT_SECONDS)
    problems.set('REQUEST_TIMEOUT_SECONDS', 'REQUEST_TIMEOUT_SECONDS must be at least HEADERS_TIMEOUT_SECONDS');
  if (parsed && parsed.UPSTREAM_LIST_LIMIT_PARAM === pagingParamOf(parsed)) {
    problems.set('UPSTREAM_LIST_PAGING_PARAM', 'UPSTREAM_LIST_PAGING_PARAM must differ from UPSTREAM_LIST_LIMIT_PARAM');
  }
  if (parsed && parsed.TURNSTILE_MODE === 'surge' && !(parsed.TURNSTILE_SECRET_KEY && parsed.TURNSTILE_SITE_KEY)) {
    problems.set(
      'TURNSTILE_MODE',
      'TURNSTILE_MODE=surge needs TURNSTILE_SECRET_KEY and TURNSTILE_SITE_KEY (the form is sent the site key to show the challenge)',
    );
  }
  if (parsed?.TRUSTED_PROXIES && parsed.TRUST_PROXY_HOPS > 0) {
    problems.set('TRUSTED_PROXIES', 'TRUSTED_PROXIES and TRUST_PROXY_HOPS are two ways to say the same: set one of them');
  }
  if (result.data && result.data.ADMIN_PORT === result.data.PORT) problems.set('ADMIN_PORT', 'ADMIN_PORT must differ from PORT');
  if (!result.success || problems.size > 0) {
    // A secret pasted into another variable is not echoed; a secret's own lines are our wording only.
    const redact = createRedactor([...SECRET_VARIABLES].map((name) => source[name]));
    return { ok: false, problems: [...problems].map(([name, line]) => (SECRET_VARIABLES.has(name) ? line : redact(line))) };
  }
  const env = result.data;
  return {
    ok: true,
    notices: noticesFor(env),
    config: {
      mode: env.NEWSLETTER_API_KEY ? 'upstream' : 'demo',
      apiKey: env.NEWSLETTER_API_KEY,
      apiBaseUrl: env.NEWSLETTER_API_BASE_URL,
      allowedOrigins: env.ALLOWED_ORIGINS,
      port: env.PORT,
      host: env.HOST,
      cacheTtlSeconds: env.CACHE_TTL_SECONDS,
      cacheMaxBytes: env.CACHE_MAX_BYTES,
      notFoundTtlSeconds: env.NOT_FOUND_CACHE_TTL_SECONDS,
      archiveMaxIssues: env.ARCHIVE_MAX_ISSUES,
      upstreamTimeoutMs: env.UPSTREAM_TIMEOUT_MS,
      subscribeRateLimitPerMinute: env.SUBSCRIBE_RATE_LIMIT_PER_MINUTE,
      subscribeSourceType: env.SUBSCRIBE_SOURCE_TYPE,
      subscribeDefaultSource: env.SUBSCRIBE_DEFAULT_SOURCE,
      subscribeRedirectUrl: env.SUBSCRIBE_REDIRECT_URL,
      honeypotField: env.SUBSCRIBE_HONEYPOT_FIELD,
      trustProxyHops: env.TRUST_PROXY_HOPS,
      maxConnections: env.MAX_CONNECTIONS,
      headersTimeoutMs: env.HEADERS_TIMEOUT_SECONDS * 1000,
      requestTimeoutMs: env.REQUEST_TIMEOUT_SECONDS * 1000,
      rateLimitIpv6Prefix: env.RATE_LIMIT_IPV6_PREFIX,
      turnstileSecretKey: env.TURNSTILE_SECRET_KEY,
      turnstileSiteKey: env.TURNSTILE_SITE_KEY,
      turnstileVerifyUrl: env.TURNSTILE_VERIFY_URL,
      subscribeSurgePerMinute: env.SUBSCRIBE_SURGE_PER_MINUTE,
      subscribeSurgeSeconds: env.SUBSCRIBE_SURGE_SECONDS,
      turnstileMode: env.TURNSTILE_MODE,
      subscribeBlockDisposable: env.SUBSCRIBE_BLOCK_DISPOSABLE,
      alertWebhookUrl: env.ALERT_WEBHOOK_URL,
      trustedProxies: env.TRUSTED_PROXIES,
      readBudgetPerMinute: env.READ_BUDGET_PER_MINUTE,
      readBudgetPerClientPerMinute: env.READ_BUDGET_PER_CLIENT_PER_MINUTE,
      indexRefreshMinSeconds: env.INDEX_REFRESH_MIN_SECONDS,
      archiveResyncSeconds: env.ARCHIVE_RESYNC_SECONDS,
      deployHookUrl: env.DEPLOY_HOOK_URL,
      redisUrl: env.REDIS_URL,
      redisTimeoutMs: env.REDIS_TIMEOUT_MS,
      siteIssueUrl: env.SITE_ISSUE_URL,
      publicationName: env.PUBLICATION_NAME,
      publicBaseUrl: env.PUBLIC_BASE_URL,
      listPaging: {
        limitParam: env.UPSTREAM_LIST_LIMIT_PARAM,
        style: env.UPSTREAM_LIST_PAGING,
        pagingParam: pagingParamOf(env),
        pageSize: env.UPSTREAM_LIST_PAGE_SIZE,
      },
      adminPort: env.ADMIN_PORT === 0 ? undefined : env.ADMIN_PORT,
      adminHost: env.ADMIN_HOST,
      adminUnreadyAfterSeconds: env.ADMIN_UNREADY_AFTER_SECONDS,
      accessLog: env.ACCESS_LOG,
    },
  };
}

/** The paging parameter's name: as set, or the guess for the paging style. */
function pagingParamOf(env: { UPSTREAM_LIST_PAGING: ListPaging['style']; UPSTREAM_LIST_PAGING_PARAM?: string | undefined }): string {
  if (env.UPSTREAM_LIST_PAGING_PARAM !== undefined) return env.UPSTREAM_LIST_PAGING_PARAM;
  return env.UPSTREAM_LIST_PAGING === 'page' ? LIST_ISSUES_PAGE_PARAM : DEFAULT_LIST_PAGING.pagingParam;
}

/** What a setting that no longer does what its name says does now (docs/configuration.md). */
function noticesFor(env: { MAX_CONNECTIONS_PER_CLIENT: number }): string[] {
  const notices: string[] = [];
  if (env.MAX_CONNECTIONS_PER_CLIENT !== 0) {
    notices.push(
      'MAX_CONNECTIONS_PER_CLIENT is no longer used: one address may open as many connections as it needs while the listener has room; near MAX_CONNECTIONS the listener closes idle kept-alive connections, then request heads not sent in time, from the address holding most (docs/node-http.md)',
    );
  }
  return notices;
}
