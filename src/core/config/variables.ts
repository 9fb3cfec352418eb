import * as z from '../zod.js';
import { parseHttpUrl } from '../http/origins.js';
import { DEFAULT_LIST_PAGING, LIST_ISSUES_MAX_ROWS } from '../upstream/assumptions.js';
import { parseAddressList } from '../http/ip-address.js';
import { addIssue, blankToUndefined, preprocess, wholeNumber } from '../validation.js';

/* The variables' rules, in blocks that config.ts puts together. */

const LOOPBACK_HOSTS = new Set(['localhost', '[::1]']);

function isLoopbackHost(hostname: string): boolean {
  return LOOPBACK_HOSTS.has(hostname) || /^127(?:\.\d{1,3}){3}$/.test(hostname);
}

/** https, or plain http to this machine only (a local fake). */
export function isHttpsOrLoopback(url: URL | undefined): boolean {
  return url?.protocol === 'https:' || (url?.protocol === 'http:' && isLoopbackHost(url.hostname));
}

const HOST_NAME = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/i;

/** A DNS name, an IPv4 address or a bare IPv6 address (two colons at least: `127.0.0.1:8787` is refused). */
export function isListenHost(host: string): boolean {
  return HOST_NAME.test(host) || (/:.*:/.test(host) && /^[0-9a-f:.]{2,45}$/i.test(host));
}

/** Blank is unset. */
function optionalVariable<S extends z.ZodMiniType>(schema: S) {
  return preprocess(blankToUndefined, z.optional(schema));
}

export function optionalText() {
  return optionalVariable(z.string());
}

/** A Worker binding may hold it as a number. */
export function wholeNumberVariable(min: number, max: number, fallback: number) {
  return wholeNumber(min, max, fallback, (value) => {
    const given = blankToUndefined(value);
    return typeof given === 'number' ? String(given) : given;
  });
}

const TURNSTILE_SITEVERIFY_URL = 'https://challenges.cloudflare.com/turnstile/v0/siteverify';
const HTTPS_ONLY = 'must be an https URL (plain http is accepted only for a loopback host)';
const httpsUrl = z.refine<string>((value) => isHttpsOrLoopback(parseHttpUrl(value)), { error: HTTPS_ONLY });

function isRedisUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === 'redis:' || url.protocol === 'rediss:') && url.hostname !== '' && !url.search && !url.hash;
  } catch {
    return false;
  }
}

/** Never one List Issues' filters already use. */
function queryParameterName(fallback: string) {
  return preprocess(
    blankToUndefined,
    z._default(
      z.string().check(
        z.regex(/^[A-Za-z][A-Za-z0-9_.[\]-]{0,63}$/, { error: 'must be a query parameter name (letters, digits, _ . - [ ])' }),
        z.refine((value) => value !== 'status' && value !== 'isPublic', { error: 'must not be status or isPublic' }),
      ),
      fallback,
    ),
  );
}

/** How List Issues pages is not documented: the defaults are guesses (docs/upstream.md "Assumptions"). */
export const UPSTREAM_PAGING_VARIABLES = {
  UPSTREAM_LIST_LIMIT_PARAM: queryParameterName(DEFAULT_LIST_PAGING.limitParam),
  UPSTREAM_LIST_PAGING: preprocess(
    blankToUndefined,
    z._default(z.enum(['offset', 'page'], { error: 'must be offset or page' }), DEFAULT_LIST_PAGING.style),
  ),
  UPSTREAM_LIST_PAGING_PARAM: optionalVariable(queryParameterName('')),
  UPSTREAM_LIST_PAGE_SIZE: wholeNumberVariable(1, LIST_ISSUES_MAX_ROWS, DEFAULT_LIST_PAGING.pageSize),
};

function booleanVariable(fallback: boolean) {
  return preprocess(
    (value) => {
      const given = blankToUndefined(value);
      return typeof given === 'boolean' ? String(given) : typeof given === 'string' ? given.trim().toLowerCase() : given;
    },
    z._default(
      z.pipe(
        z.enum(['true', 'false'], { error: 'must be true or false' }),
        z.transform((value) => value === 'true'),
      ),
      fallback,
    ),
  );
}

/** docs/node-http.md. */
export const NODE_LISTENER_VARIABLES = {
  // docs/node-http.md "What a connection costs" says why 4096.
  MAX_CONNECTIONS: wholeNumberVariable(16, 1_000_000, 4096),
  // No longer used; accepted with a notice at start-up.
  MAX_CONNECTIONS_PER_CLIENT: wholeNumberVariable(1, 1_000_000, 0),
  HEADERS_TIMEOUT_SECONDS: wholeNumberVariable(1, 15, 10),
  REQUEST_TIMEOUT_SECONDS: wholeNumberVariable(1, 30, 30),
};

export const CLIENT_ADDRESS_VARIABLES = {
  TRUST_PROXY_HOPS: wholeNumberVariable(0, 10, 0),
  RATE_LIMIT_IPV6_PREFIX: wholeNumberVariable(32, 128, 64),
  TRUSTED_PROXIES: optionalVariable(
    z.pipe(
      z.string({ error: 'must be a comma-separated list of addresses or CIDR networks' }),
      z.transform((value: string, ctx) => {
        const { list, invalid } = parseAddressList(value);
        if (invalid.length > 0)
          addIssue(ctx, `has entries that are not addresses, CIDR networks or loopback/linklocal/uniquelocal: ${invalid.join(', ')}`);
        return list;
      }),
    ),
  ),
};

/** docs/security.md, docs/subscribe.md. */
export const CHALLENGE_VARIABLES = {
  TURNSTILE_SECRET_KEY: optionalText(),
  TURNSTILE_SITE_KEY: optionalVariable(
    z.string().check(z.regex(/^[\w-]{1,256}$/, { error: 'must be a site key (letters, digits, _ or -)' })),
  ),
  TURNSTILE_VERIFY_URL: preprocess(blankToUndefined, z._default(z.string().check(httpsUrl), TURNSTILE_SITEVERIFY_URL)),
  TURNSTILE_MODE: preprocess(blankToUndefined, z._default(z.enum(['always', 'surge'], { error: 'must be always or surge' }), 'always')),
};

/** docs/subscribe.md. */
export const SUBSCRIBE_SURGE_VARIABLES = {
  // 0 turns surge detection off; docs/subscribe.md says why 30.
  SUBSCRIBE_SURGE_PER_MINUTE: wholeNumberVariable(0, 100_000, 30),
  SUBSCRIBE_SURGE_SECONDS: wholeNumberVariable(10, 86_400, 600),
  SUBSCRIBE_BLOCK_DISPOSABLE: booleanVariable(false),
  // Never echoed: a chat webhook's URL is its credential.
  ALERT_WEBHOOK_URL: optionalVariable(z.string({ error: HTTPS_ONLY }).check(httpsUrl)),
};

/** docs/upstream.md "How the archive is read and kept fresh". */
export const ARCHIVE_READ_VARIABLES = {
  ARCHIVE_RESYNC_SECONDS: wholeNumberVariable(10, 86_400, 600),
  INDEX_REFRESH_MIN_SECONDS: wholeNumberVariable(0, 300, 5),
  READ_BUDGET_PER_MINUTE: wholeNumberVariable(1, 100_000, 120),
  READ_BUDGET_PER_CLIENT_PER_MINUTE: wholeNumberVariable(1, 100_000, 30),
};

/** No user or password: fetch refuses a URL that carries them. */
function isHookUrl(value: string): boolean {
  const url = parseHttpUrl(value);
  return isHttpsOrLoopback(url) && url?.username === '' && url.password === '';
}

/** docs/deployment.md "Build hooks". */
export const DEPLOY_HOOK_VARIABLES = {
  // Never echoed: a build hook's URL is its credential.
  DEPLOY_HOOK_URL: optionalVariable(
    z
      .string({ error: `${HTTPS_ONLY}, without a user or password` })
      .check(z.refine(isHookUrl, { error: `${HTTPS_ONLY}, without a user or password` })),
  ),
};

/** docs/deployment.md "Several instances". */
export const SHARED_STATE_VARIABLES = {
  // Validated for shape only, and never echoed: the URL may carry a password.
  REDIS_URL: optionalVariable(
    z
      .string({ error: 'must be a redis:// or rediss:// URL' })
      .check(z.refine(isRedisUrl, { error: 'must be a redis:// or rediss:// URL with a host' })),
  ),
  REDIS_TIMEOUT_MS: wholeNumberVariable(10, 5000, 100),
};
