import { describe, it, expect } from 'vitest';
import { parseConfig, type Config } from '../src/core/config/config.js';
import { SUBSCRIBER_SOURCE_TYPES } from '../src/core/upstream/schemas.js';

/** A fake key distinctive enough that any echo of it in a problem line is unmistakable. */
const KEY = 'sk_live_ZEBRA-quokka-4471-not-real';
const BASE_URL = 'https://api.example.com/v1';
const MIB = 1024 * 1024;

/** Parses over a valid key and base URL; fails the test with the problems if parsing fails. */
function configWith(env: Record<string, unknown> = {}): Config {
  const result = parseConfig({ NEWSLETTER_API_KEY: KEY, NEWSLETTER_API_BASE_URL: BASE_URL, ...env });
  if (!result.ok) throw new Error(`expected a valid config, got: ${result.problems.join(' | ')}`);
  return result.config;
}

/** Parses a raw source and returns its problem lines; fails the test if parsing succeeds. */
function problemsOf(source: Record<string, unknown>): string[] {
  const result = parseConfig(source);
  if (result.ok) throw new Error('expected configuration problems, but the source was accepted');
  return result.problems;
}

/** Problem lines for one bad variable over an otherwise valid configuration. */
function problemsWith(env: Record<string, unknown>): string[] {
  return problemsOf({ NEWSLETTER_API_KEY: KEY, NEWSLETTER_API_BASE_URL: BASE_URL, ...env });
}

describe('parseConfig defaults', () => {
  it('fills every optional variable with the default of docs/configuration.md when only the key and base URL are set', () => {
    expect(configWith()).toEqual({
      mode: 'upstream',
      apiKey: KEY,
      apiBaseUrl: BASE_URL,
      allowedOrigins: [],
      port: 8787,
      host: '127.0.0.1',
      cacheTtlSeconds: 60,
      categoriesTtlSeconds: 60,
      cacheMaxBytes: 64 * MIB,
      notFoundTtlSeconds: 30,
      archiveMaxIssues: 5000,
      upstreamTimeoutMs: 8000,
      subscribeRateLimitPerMinute: 10,
      subscribeSourceType: 'embed',
      subscribeDefaultSource: 'website',
      subscribeRedirectUrl: undefined,
      honeypotField: 'website',
      trustProxyHops: 0,
      maxConnections: 4096,
      headersTimeoutMs: 10_000,
      requestTimeoutMs: 30_000,
      rateLimitIpv6Prefix: 64,
      turnstileSecretKey: undefined,
      turnstileSiteKey: undefined,
      turnstileVerifyUrl: 'https://challenges.cloudflare.com/turnstile/v0/siteverify',
      subscribeSurgePerMinute: 30,
      subscribeSurgeSeconds: 600,
      turnstileMode: 'always',
      subscribeBlockDisposable: false,
      alertWebhookUrl: undefined,
      trustedProxies: undefined,
      readBudgetPerMinute: 120,
      readBudgetPerClientPerMinute: 30,
      indexRefreshMinSeconds: 5,
      archiveResyncSeconds: 600,
      deployHookUrl: undefined,
      redisUrl: undefined,
      redisTimeoutMs: 100,
      siteIssueUrl: undefined,
      publicationName: undefined,
      publicBaseUrl: undefined,
      listPaging: { limitParam: 'limit', style: 'offset', pagingParam: 'offset', pageSize: 200 },
      adminPort: undefined,
      adminHost: '127.0.0.1',
      adminUnreadyAfterSeconds: 60,
      accessLog: 'summary',
    } satisfies Config);
  });

  it('reads every variable when each one is set to a valid non-default value', () => {
    expect(
      configWith({
        ALLOWED_ORIGINS: 'https://site.example',
        PORT: '3000',
        HOST: '0.0.0.0',
        CACHE_TTL_SECONDS: '120',
        CATEGORIES_TTL_SECONDS: '900',
        CACHE_MAX_BYTES: String(8 * MIB),
        NOT_FOUND_CACHE_TTL_SECONDS: '15',
        ARCHIVE_MAX_ISSUES: '1000',
        UPSTREAM_TIMEOUT_MS: '2500',
        SUBSCRIBE_RATE_LIMIT_PER_MINUTE: '5',
        SUBSCRIBE_SOURCE_TYPE: 'subscribe_page',
        SUBSCRIBE_DEFAULT_SOURCE: 'footer form',
        SUBSCRIBE_REDIRECT_URL: 'https://site.example/thanks',
        SUBSCRIBE_HONEYPOT_FIELD: 'company_url',
        TRUST_PROXY_HOPS: '2',
        MAX_CONNECTIONS: '200',
        MAX_CONNECTIONS_PER_CLIENT: '20',
        HEADERS_TIMEOUT_SECONDS: '5',
        REQUEST_TIMEOUT_SECONDS: '20',
        RATE_LIMIT_IPV6_PREFIX: '56',
        TURNSTILE_SECRET_KEY: '0x4AAAAAAA-fake-secret',
        TURNSTILE_SITE_KEY: '0x4AAAAAAA-fake-site',
        TURNSTILE_VERIFY_URL: 'http://127.0.0.1:9999/siteverify',
        SUBSCRIBE_SURGE_PER_MINUTE: '50',
        SUBSCRIBE_SURGE_SECONDS: '120',
        TURNSTILE_MODE: 'surge',
        SUBSCRIBE_BLOCK_DISPOSABLE: 'true',
        ALERT_WEBHOOK_URL: 'https://hooks.example/services/fake',
        READ_BUDGET_PER_MINUTE: '600',
        READ_BUDGET_PER_CLIENT_PER_MINUTE: '60',
        INDEX_REFRESH_MIN_SECONDS: '0',
        ARCHIVE_RESYNC_SECONDS: '120',
        DEPLOY_HOOK_URL: 'https://api.netlify.com/build_hooks/fake-hook-id',
        SITE_ISSUE_URL: 'https://site.example/issues/{slug}/',
        PUBLICATION_NAME: 'Les Carnets du jardin',
        PUBLIC_BASE_URL: 'https://site.example/news-api/',
        NODE_ENV: 'production',
        ADMIN_PORT: '9464',
        ADMIN_HOST: '::1',
        ADMIN_UNREADY_AFTER_SECONDS: '30',
        ACCESS_LOG: 'all',
      }),
    ).toEqual({
      mode: 'upstream',
      apiKey: KEY,
      apiBaseUrl: BASE_URL,
      allowedOrigins: ['https://site.example'],
      port: 3000,
      host: '0.0.0.0',
      cacheTtlSeconds: 120,
      categoriesTtlSeconds: 900,
      cacheMaxBytes: 8 * MIB,
      notFoundTtlSeconds: 15,
      archiveMaxIssues: 1000,
      upstreamTimeoutMs: 2500,
      subscribeRateLimitPerMinute: 5,
      subscribeSourceType: 'subscribe_page',
      subscribeDefaultSource: 'footer form',
      subscribeRedirectUrl: 'https://site.example/thanks',
      honeypotField: 'company_url',
      trustProxyHops: 2,
      maxConnections: 200,
      headersTimeoutMs: 5000,
      requestTimeoutMs: 20_000,
      rateLimitIpv6Prefix: 56,
      turnstileSecretKey: '0x4AAAAAAA-fake-secret',
      turnstileSiteKey: '0x4AAAAAAA-fake-site',
      turnstileVerifyUrl: 'http://127.0.0.1:9999/siteverify',
      subscribeSurgePerMinute: 50,
      subscribeSurgeSeconds: 120,
      turnstileMode: 'surge',
      subscribeBlockDisposable: true,
      alertWebhookUrl: 'https://hooks.example/services/fake',
      trustedProxies: undefined,
      readBudgetPerMinute: 600,
      readBudgetPerClientPerMinute: 60,
      indexRefreshMinSeconds: 0,
      archiveResyncSeconds: 120,
      deployHookUrl: 'https://api.netlify.com/build_hooks/fake-hook-id',
      redisUrl: undefined,
      redisTimeoutMs: 100,
      siteIssueUrl: 'https://site.example/issues/{slug}/',
      publicationName: 'Les Carnets du jardin',
      publicBaseUrl: 'https://site.example/news-api',
      listPaging: { limitParam: 'limit', style: 'offset', pagingParam: 'offset', pageSize: 200 },
      adminPort: 9464,
      adminHost: '::1',
      adminUnreadyAfterSeconds: 30,
      accessLog: 'all',
    } satisfies Config);
  });

  it('treats empty and whitespace-only values as unset, so every one falls back to its default', () => {
    const blanks = [
      'ALLOWED_ORIGINS',
      'PORT',
      'HOST',
      'CACHE_TTL_SECONDS',
      'CATEGORIES_TTL_SECONDS',
      'CACHE_MAX_BYTES',
      'NOT_FOUND_CACHE_TTL_SECONDS',
      'ARCHIVE_MAX_ISSUES',
      'UPSTREAM_TIMEOUT_MS',
      'SUBSCRIBE_RATE_LIMIT_PER_MINUTE',
      'SUBSCRIBE_SOURCE_TYPE',
      'SUBSCRIBE_DEFAULT_SOURCE',
      'SUBSCRIBE_REDIRECT_URL',
      'SUBSCRIBE_HONEYPOT_FIELD',
      'TRUST_PROXY_HOPS',
      'MAX_CONNECTIONS',
      'MAX_CONNECTIONS_PER_CLIENT',
      'HEADERS_TIMEOUT_SECONDS',
      'REQUEST_TIMEOUT_SECONDS',
      'RATE_LIMIT_IPV6_PREFIX',
      'TURNSTILE_VERIFY_URL',
      'NODE_ENV',
      'PUBLICATION_NAME',
      'PUBLIC_BASE_URL',
      'UPSTREAM_LIST_LIMIT_PARAM',
      'UPSTREAM_LIST_PAGING',
      'UPSTREAM_LIST_PAGING_PARAM',
      'UPSTREAM_LIST_PAGE_SIZE',
      'ADMIN_PORT',
      'ADMIN_HOST',
      'ADMIN_UNREADY_AFTER_SECONDS',
      'ACCESS_LOG',
    ];
    const env = Object.fromEntries(blanks.map((name, index) => [name, index % 2 === 0 ? '' : '  \t ']));
    expect(configWith(env)).toEqual(configWith());
  });

  it('runs demo mode when the key and the base URL are both blank', () => {
    const result = parseConfig({ NEWSLETTER_API_KEY: '   ', NEWSLETTER_API_BASE_URL: '', NODE_ENV: '' });
    expect(result).toMatchObject({ ok: true, config: { mode: 'demo', apiKey: undefined, apiBaseUrl: undefined } });
  });

  it('ignores variables it does not know, as process.env is full of them', () => {
    expect(configWith({ PATH: '/usr/bin', HOME: '/root', npm_lifecycle_event: 'start' })).toEqual(configWith());
  });

  it('still starts with MAX_CONNECTIONS_PER_CLIENT set, with one notice saying what the listener does now', () => {
    const unset = parseConfig({ NEWSLETTER_API_KEY: KEY, NEWSLETTER_API_BASE_URL: BASE_URL });
    expect(unset).toMatchObject({ ok: true, notices: [] });
    const set = parseConfig({ NEWSLETTER_API_KEY: KEY, NEWSLETTER_API_BASE_URL: BASE_URL, MAX_CONNECTIONS_PER_CLIENT: '64' });
    expect(set.ok).toBe(true);
    if (!set.ok) return;
    expect(set.config).toEqual(configWith());
    expect(set.notices).toEqual([
      expect.stringMatching(
        /^MAX_CONNECTIONS_PER_CLIENT is no longer used: one address may open as many connections as fit \(docs\/node-http.md\)$/,
      ),
    ]);
  });

  it('accepts numbers given as Worker bindings of type number', () => {
    expect(configWith({ PORT: 8080, TRUST_PROXY_HOPS: 1 })).toMatchObject({ port: 8080, trustProxyHops: 1 });
  });
});

describe('parseConfig NEWSLETTER_API_BASE_URL', () => {
  it.each([
    ['https://api.example.com/v1', 'https://api.example.com/v1'],
    ['https://api.example.com/v1/', 'https://api.example.com/v1'],
    ['https://API.Example.com:8443/newsletter/v1', 'https://api.example.com:8443/newsletter/v1'],
    ['http://127.0.0.1:3000/v1', 'http://127.0.0.1:3000/v1'],
    ['http://127.45.6.7/v1', 'http://127.45.6.7/v1'],
    ['http://localhost:8080/v1', 'http://localhost:8080/v1'],
    ['http://[::1]:8080/v1', 'http://[::1]:8080/v1'],
  ])('accepts %s and stores it as %s', (value, stored) => {
    expect(configWith({ NEWSLETTER_API_BASE_URL: value }).apiBaseUrl).toBe(stored);
  });

  it.each([
    ['nope', 'must be an absolute URL such as https://api.example.com/v1'],
    ['/v1', 'must be an absolute URL such as https://api.example.com/v1'],
    ['api.example.com/v1', 'must be an absolute URL such as https://api.example.com/v1'],
    ['https://api.example.com', 'must end in /v1'],
    ['https://api.example.com/v2', 'must end in /v1'],
    ['https://api.example.com/v1/issues', 'must end in /v1'],
    ['https://api.example.com/v10', 'must end in /v1'],
    ['https://api.example.com/apiv1', 'must end in /v1'],
    ['http://api.example.com/v1', 'must use https (plain http is accepted only for a loopback host)'],
    ['http://10.0.0.5/v1', 'must use https (plain http is accepted only for a loopback host)'],
    ['http://localhost.example.com/v1', 'must use https (plain http is accepted only for a loopback host)'],
    ['http://127.0.0.1.example.com/v1', 'must use https (plain http is accepted only for a loopback host)'],
    ['ftp://api.example.com/v1', 'must use https (plain http is accepted only for a loopback host)'],
    ['https://user:hunter2@api.example.com/v1', 'must not carry credentials, a query or a fragment'],
    ['https://api.example.com/v1?token=abc', 'must not carry credentials, a query or a fragment'],
    ['https://api.example.com/v1#top', 'must not carry credentials, a query or a fragment'],
  ])('refuses %s with one line naming the variable', (value, message) => {
    expect(problemsWith({ NEWSLETTER_API_BASE_URL: value })).toEqual([`NEWSLETTER_API_BASE_URL ${message}`]);
  });

  it('does not echo credentials embedded in the base URL', () => {
    const [line] = problemsWith({ NEWSLETTER_API_BASE_URL: 'https://admin:Pa55-WORD-xyzzy@api.example.com/v1' });
    expect(line).toMatch(/^NEWSLETTER_API_BASE_URL /);
    expect(line).not.toContain('Pa55-WORD-xyzzy');
    expect(line).not.toContain('admin');
  });
});

describe('parseConfig numeric variables', () => {
  const numeric: readonly { name: string; field: keyof Config; min: number; max: number }[] = [
    { name: 'PORT', field: 'port', min: 1, max: 65535 },
    { name: 'CACHE_TTL_SECONDS', field: 'cacheTtlSeconds', min: 1, max: 86_400 },
    { name: 'CATEGORIES_TTL_SECONDS', field: 'categoriesTtlSeconds', min: 1, max: 86_400 },
    { name: 'CACHE_MAX_BYTES', field: 'cacheMaxBytes', min: MIB, max: 4096 * MIB },
    { name: 'NOT_FOUND_CACHE_TTL_SECONDS', field: 'notFoundTtlSeconds', min: 1, max: 3600 },
    { name: 'ARCHIVE_MAX_ISSUES', field: 'archiveMaxIssues', min: 200, max: 100_000 },
    { name: 'UPSTREAM_TIMEOUT_MS', field: 'upstreamTimeoutMs', min: 100, max: 60_000 },
    { name: 'SUBSCRIBE_RATE_LIMIT_PER_MINUTE', field: 'subscribeRateLimitPerMinute', min: 1, max: 10_000 },
    { name: 'TRUST_PROXY_HOPS', field: 'trustProxyHops', min: 0, max: 10 },
    { name: 'REDIS_TIMEOUT_MS', field: 'redisTimeoutMs', min: 10, max: 5000 },
    { name: 'ARCHIVE_RESYNC_SECONDS', field: 'archiveResyncSeconds', min: 10, max: 86_400 },
  ];

  for (const { name, field, min, max } of numeric) {
    describe(name, () => {
      it(`accepts the bounds ${min} and ${max}, with surrounding spaces trimmed`, () => {
        expect(configWith({ [name]: String(min) })[field]).toBe(min);
        expect(configWith({ [name]: ` ${max} ` })[field]).toBe(max);
      });

      it.each([
        ['one below the minimum', String(min - 1)],
        ['one above the maximum', String(max + 1)],
        ['a fraction', `${min}.5`],
        ['a negative number', `-${max}`],
        ['an exponent', '1e3'],
        ['a word', 'eighty'],
        ['a number with a unit', `${max}ms`],
        ['a hexadecimal number', '0x10'],
      ])(`refuses %s with "${name} must be a whole number from ${min} to ${max}"`, (_label, value) => {
        expect(problemsWith({ [name]: value })).toEqual([`${name} must be a whole number from ${min} to ${max}`]);
      });
    });
  }

  it('refuses a fractional number given as a Worker binding of type number', () => {
    expect(problemsWith({ PORT: 8080.5 })).toEqual(['PORT must be a whole number from 1 to 65535']);
  });
});

describe('parseConfig HOST', () => {
  it.each(['127.0.0.1', '0.0.0.0', 'localhost', 'bff.internal.example', '::', '::1', 'fe80::1'])('accepts %s', (host) => {
    expect(configWith({ HOST: host }).host).toBe(host);
  });

  it.each(['no such host!', 'http://127.0.0.1', '127.0.0.1:8787', 'host/path', '-leading.example', '[::1]'])(
    'refuses %j with one line naming HOST',
    (host) => {
      expect(problemsWith({ HOST: host })).toEqual(['HOST must be a host name or an IP address']);
    },
  );
});

describe('parseConfig SITE_ISSUE_URL', () => {
  it.each(['https://www.example.com/issues/{slug}/', 'http://127.0.0.1:8787/issue.html?slug={slug}', 'https://example.com/{slug}'])(
    'accepts the template %s as it is',
    (template) => {
      expect(configWith({ SITE_ISSUE_URL: template }).siteIssueUrl).toBe(template);
    },
  );

  it('refuses a URL without {slug}, with one line naming SITE_ISSUE_URL', () => {
    expect(problemsWith({ SITE_ISSUE_URL: 'https://www.example.com/issues/' })).toEqual([
      "SITE_ISSUE_URL must contain {slug}, where the issue's slug goes",
    ]);
  });

  it.each(['/issues/{slug}/', 'ftp://example.com/{slug}', 'javascript:{slug}', 'www.example.com/{slug}'])(
    'refuses %j, which is not an absolute http(s) URL',
    (template) => {
      expect(problemsWith({ SITE_ISSUE_URL: template })).toEqual([
        'SITE_ISSUE_URL must be an absolute http(s) URL such as https://www.example.com/issues/{slug}/',
      ]);
    },
  );
});

describe('parseConfig PUBLICATION_NAME and PUBLIC_BASE_URL', () => {
  it('keeps the name as given, up to 200 characters', () => {
    expect(configWith({ PUBLICATION_NAME: 'Die Gartenbriefe' }).publicationName).toBe('Die Gartenbriefe');
    expect(problemsWith({ PUBLICATION_NAME: 'x'.repeat(201) })).toEqual(['PUBLICATION_NAME must be at most 200 characters']);
  });

  it.each([
    ['https://news-api.example.com', 'https://news-api.example.com'],
    ['https://news-api.example.com/', 'https://news-api.example.com'],
    ['https://www.example.com/bff//', 'https://www.example.com/bff'],
    ['http://127.0.0.1:8787', 'http://127.0.0.1:8787'],
  ])('reads the base URL %s as %s', (given, kept) => {
    expect(configWith({ PUBLIC_BASE_URL: given }).publicBaseUrl).toBe(kept);
  });

  it.each([
    'news-api.example.com',
    '/api',
    'ftp://example.com',
    'https://example.com/?a=1',
    'https://example.com/#x',
    'https://user:pw@example.com',
  ])('refuses %j with one line naming PUBLIC_BASE_URL', (given) => {
    expect(problemsWith({ PUBLIC_BASE_URL: given })).toEqual([
      'PUBLIC_BASE_URL must be an absolute http(s) URL without a query or fragment, such as https://news-api.example.com',
    ]);
  });
});

describe('parseConfig admin listener', () => {
  it('refuses an ADMIN_PORT of 0, out of range or equal to PORT', () => {
    expect(problemsWith({ ADMIN_PORT: '0' })).toEqual(['ADMIN_PORT must be a whole number from 1 to 65535']);
    expect(problemsWith({ ADMIN_PORT: '70000' })).toEqual(['ADMIN_PORT must be a whole number from 1 to 65535']);
    expect(problemsWith({ PORT: '8080', ADMIN_PORT: '8080' })).toEqual(['ADMIN_PORT must differ from PORT']);
  });

  it('refuses an ADMIN_HOST with a port pasted in, and an unready delay outside 1 to 3600 seconds', () => {
    expect(problemsWith({ ADMIN_HOST: '127.0.0.1:9464', ADMIN_UNREADY_AFTER_SECONDS: '0' })).toEqual([
      'ADMIN_HOST must be a host name or an IP address',
      'ADMIN_UNREADY_AFTER_SECONDS must be a whole number from 1 to 3600',
    ]);
  });
});

describe('parseConfig ALLOWED_ORIGINS', () => {
  it('accepts * alone as "any origin"', () => {
    expect(configWith({ ALLOWED_ORIGINS: ' * ' }).allowedOrigins).toBe('*');
  });

  it('accepts a comma-separated list of origins, trimming spaces and skipping empty entries', () => {
    expect(
      configWith({ ALLOWED_ORIGINS: ' https://site.example , http://localhost:3000,,https://www.site.example:8443, ' }).allowedOrigins,
    ).toEqual(['https://site.example', 'http://localhost:3000', 'https://www.site.example:8443']);
  });

  it('refuses * mixed with origins', () => {
    expect(problemsWith({ ALLOWED_ORIGINS: 'https://site.example,*' })).toEqual([
      'ALLOWED_ORIGINS must be either * alone or a list of origins',
    ]);
  });

  it.each([
    ['a trailing slash', 'https://site.example/'],
    ['a path', 'https://site.example/blog'],
    ['a query', 'https://site.example?x=1'],
    ['userinfo', 'https://user@site.example'],
    ['no scheme', 'site.example'],
    ['a non-http scheme', 'ftp://site.example'],
    ['the literal null origin', 'null'],
  ])('refuses an entry with %s', (_label, entry) => {
    const problems = problemsWith({ ALLOWED_ORIGINS: `https://ok.example,${entry}` });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^ALLOWED_ORIGINS has entries that are not origins/);
    expect(problems[0]).not.toContain('https://ok.example');
  });
});

describe('parseConfig subscribe settings', () => {
  it.each(SUBSCRIBER_SOURCE_TYPES)('accepts the upstream source type %s', (sourceType) => {
    expect(configWith({ SUBSCRIBE_SOURCE_TYPE: sourceType }).subscribeSourceType).toBe(sourceType);
  });

  it.each(['newsletter', 'EMBED', 'embed,api'])('refuses the source type %s and lists the allowed ones', (value) => {
    expect(problemsWith({ SUBSCRIBE_SOURCE_TYPE: value })).toEqual([
      'SUBSCRIBE_SOURCE_TYPE must be one of manual, subscribe_page, social_post, embed, import, api, referral',
    ]);
  });

  it('accepts a default source of exactly 160 characters and refuses 161', () => {
    expect(configWith({ SUBSCRIBE_DEFAULT_SOURCE: 's'.repeat(160) }).subscribeDefaultSource).toBe('s'.repeat(160));
    expect(problemsWith({ SUBSCRIBE_DEFAULT_SOURCE: 's'.repeat(161) })).toEqual([
      'SUBSCRIBE_DEFAULT_SOURCE must be at most 160 characters',
    ]);
  });

  it.each(['https://site.example/thanks', 'http://localhost:3000/thanks?from=form'])(
    'accepts the absolute http(s) redirect URL %s',
    (value) => {
      expect(configWith({ SUBSCRIBE_REDIRECT_URL: value }).subscribeRedirectUrl).toBe(value);
    },
  );

  it.each(['/thanks', 'site.example/thanks', 'javascript:alert(1)', 'ftp://site.example/thanks', 'data:text/html,hi'])(
    'refuses the redirect URL %s',
    (value) => {
      expect(problemsWith({ SUBSCRIBE_REDIRECT_URL: value })).toEqual(['SUBSCRIBE_REDIRECT_URL must be an absolute http(s) URL']);
    },
  );

  it.each(['website', 'company_url', 'hp-field2', `a${'b'.repeat(63)}`])('accepts the honeypot field name %s', (value) => {
    expect(configWith({ SUBSCRIBE_HONEYPOT_FIELD: value }).honeypotField).toBe(value);
  });

  it.each(['2fast', '_hidden', 'my field', 'a.b', 'fïeld', `a${'b'.repeat(64)}`])('refuses the honeypot field name %s', (value) => {
    expect(problemsWith({ SUBSCRIBE_HONEYPOT_FIELD: value })).toEqual([
      'SUBSCRIBE_HONEYPOT_FIELD must be a simple field name (letters, digits, _ or -)',
    ]);
  });

  it.each(['email', 'optInAttestation', 'source', 'sourcePlatform'])(
    'refuses %s as the honeypot, because it is a real form field',
    (value) => {
      expect(problemsWith({ SUBSCRIBE_HONEYPOT_FIELD: value })).toEqual([
        'SUBSCRIBE_HONEYPOT_FIELD must not be one of the real form fields',
      ]);
    },
  );
});

describe('parseConfig modes', () => {
  it('runs demo mode with no key and no base URL when NODE_ENV is unset', () => {
    expect(parseConfig({})).toMatchObject({
      ok: true,
      config: { mode: 'demo', apiKey: undefined, apiBaseUrl: undefined },
    });
  });

  it.each(['development', 'test'])('runs demo mode with no key when NODE_ENV is %s', (nodeEnv) => {
    expect(parseConfig({ NODE_ENV: nodeEnv })).toMatchObject({ ok: true, config: { mode: 'demo' } });
  });

  it('refuses to start in production without a key', () => {
    expect(problemsOf({ NODE_ENV: 'production' })).toEqual(['NEWSLETTER_API_KEY is required when NODE_ENV=production']);
  });

  it('refuses to start in production with a blank key, even when the base URL is set', () => {
    expect(problemsOf({ NODE_ENV: 'production', NEWSLETTER_API_KEY: '  ', NEWSLETTER_API_BASE_URL: BASE_URL })).toEqual([
      'NEWSLETTER_API_KEY is required when NODE_ENV=production',
    ]);
  });

  it('runs against the upstream in production when the key and base URL are set', () => {
    expect(configWith({ NODE_ENV: 'production' })).toMatchObject({ mode: 'upstream', apiKey: KEY });
  });

  it('refuses a key without a base URL, without echoing the key', () => {
    const problems = problemsOf({ NEWSLETTER_API_KEY: KEY });
    expect(problems).toEqual(['NEWSLETTER_API_BASE_URL is required when NEWSLETTER_API_KEY is set']);
    expect(problems.join('\n')).not.toContain(KEY);
  });

  it('refuses a base URL without a key instead of silently running the demo', () => {
    expect(problemsOf({ NEWSLETTER_API_BASE_URL: BASE_URL })).toEqual([
      'NEWSLETTER_API_KEY is required when NEWSLETTER_API_BASE_URL is set (unset both for the demo)',
    ]);
  });
});

describe('parseConfig problem reporting', () => {
  it('reports every bad variable at once, one line each, each line starting with the variable name', () => {
    const problems = problemsOf({
      NEWSLETTER_API_KEY: KEY,
      NEWSLETTER_API_BASE_URL: 'http://api.example.com/v1',
      PORT: '0',
      ALLOWED_ORIGINS: 'site.example',
      SUBSCRIBE_SOURCE_TYPE: 'newsletter',
      TRUST_PROXY_HOPS: '11',
    });
    expect(problems).toHaveLength(5);
    for (const line of problems) expect(line).not.toContain('\n');
    expect(problems.map((line) => line.split(' ')[0]).sort()).toEqual([
      'ALLOWED_ORIGINS',
      'NEWSLETTER_API_BASE_URL',
      'PORT',
      'SUBSCRIBE_SOURCE_TYPE',
      'TRUST_PROXY_HOPS',
    ]);
  });

  it('reports the missing base URL together with other problems', () => {
    const problems = problemsOf({ NEWSLETTER_API_KEY: KEY, PORT: 'eighty' });
    expect(problems.sort()).toEqual([
      'NEWSLETTER_API_BASE_URL is required when NEWSLETTER_API_KEY is set',
      'PORT must be a whole number from 1 to 65535',
    ]);
  });

  it('never puts a valid key in any problem line, even with every other variable wrong', () => {
    const problems = problemsOf({
      NEWSLETTER_API_KEY: KEY,
      NEWSLETTER_API_BASE_URL: `https://api.example.com/v1?key=${KEY}`,
      PORT: KEY,
      CACHE_TTL_SECONDS: '0',
      SUBSCRIBE_SOURCE_TYPE: KEY,
      SUBSCRIBE_DEFAULT_SOURCE: KEY.repeat(10),
      SUBSCRIBE_REDIRECT_URL: KEY,
      SUBSCRIBE_HONEYPOT_FIELD: `${KEY} `.repeat(3),
    });
    expect(problems.length).toBeGreaterThanOrEqual(7);
    for (const line of problems) expect(line).not.toContain(KEY);
  });

  it.each([
    ['containing a space', 'sk_live SECRETPART-quokka-91', 'must be printable ASCII with no spaces'],
    ['containing a non-ASCII letter', 'sk_live_SECRETPART-qüokka-91', 'must be printable ASCII with no spaces'],
    ['containing a newline', 'sk_live_SECRETPART\nquokka-91', 'must be printable ASCII with no spaces'],
    ['shorter than 8 characters', 'SECRETP', 'is shorter than 8 characters (was all of it copied?)'],
    ['longer than 4096 characters', `SECRETPART${'k'.repeat(4096)}`, 'is longer than 4096 characters'],
  ])('refuses a key %s without echoing any of it', (_label, key, message) => {
    const problems = problemsOf({ NEWSLETTER_API_KEY: key, NEWSLETTER_API_BASE_URL: BASE_URL });
    expect(problems).toEqual([`NEWSLETTER_API_KEY ${message}`]);
    expect(problems.join('\n')).not.toContain('SECRETPART');
  });

  it('never echoes the key, even when it is pasted into another variable by mistake', () => {
    const problems = problemsOf({ NEWSLETTER_API_KEY: KEY, NEWSLETTER_API_BASE_URL: BASE_URL, ALLOWED_ORIGINS: KEY });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^ALLOWED_ORIGINS /);
    expect(problems[0]).not.toContain(KEY);
  });

  it('leaves the key’s own line whole even when the key spells a word of it', () => {
    const problems = problemsOf({ NEWSLETTER_API_KEY: 'printable ASCII', NEWSLETTER_API_BASE_URL: BASE_URL });
    expect(problems).toEqual(['NEWSLETTER_API_KEY must be printable ASCII with no spaces']);
  });

  it.each(['e', 'a', 'is', 'than'])('leaves its own wording whole when the key is a short fragment of it (%j)', (key) => {
    const problems = problemsOf({ NEWSLETTER_API_KEY: key, NEWSLETTER_API_BASE_URL: BASE_URL });
    expect(problems).toEqual(['NEWSLETTER_API_KEY is shorter than 8 characters (was all of it copied?)']);
  });

  it('never echoes the Turnstile secret pasted into another variable', () => {
    const secret = '0x4AAAAAAA-turnstile-secret';
    const problems = problemsWith({ TURNSTILE_SECRET_KEY: secret, ALLOWED_ORIGINS: secret });
    expect(problems).toHaveLength(1);
    expect(problems[0]).not.toContain(secret);
  });

  it.each([
    ['TURNSTILE_VERIFY_URL', 'http://verify.example/siteverify', 'must be an https URL'],
    ['TURNSTILE_SITE_KEY', 'has spaces', 'must be a site key'],
    ['MAX_CONNECTIONS', '3', 'must be'],
    ['HEADERS_TIMEOUT_SECONDS', '60', 'must be'],
    ['REQUEST_TIMEOUT_SECONDS', '300', 'must be'],
    ['RATE_LIMIT_IPV6_PREFIX', '16', 'must be'],
  ])('refuses %s=%j', (name, value, message) => {
    const [problem] = problemsWith({ [name]: value });
    expect(problem).toMatch(new RegExp(`^${name} ${message}`));
  });

  it('refuses a request timeout shorter than the headers timeout', () => {
    expect(problemsWith({ HEADERS_TIMEOUT_SECONDS: '10', REQUEST_TIMEOUT_SECONDS: '5' })).toEqual([
      'REQUEST_TIMEOUT_SECONDS must be at least HEADERS_TIMEOUT_SECONDS',
    ]);
  });
});

describe('parseConfig REDIS_URL', () => {
  it.each(['redis://127.0.0.1:6379', 'rediss://user:pass@cache.example.com:6380/2', 'redis://[::1]:6379'])('accepts %s', (url) => {
    expect(configWith({ REDIS_URL: url }).redisUrl).toBe(url);
  });

  it('is off when unset or blank', () => {
    expect(configWith({ REDIS_URL: '  ' }).redisUrl).toBeUndefined();
  });

  it.each([
    ['another scheme', 'http://cache.example.com:6379'],
    ['no host', 'redis://'],
    ['not a URL', 'cache.example.com:6379'],
    ['a query', 'redis://cache.example.com:6379/?password=x'],
  ])('refuses %s without echoing the URL, which may carry a password', (_label, url) => {
    const problems = problemsWith({ REDIS_URL: url.replace('cache', 'PASSWORDLIKE') });
    expect(problems).toEqual(['REDIS_URL must be a redis:// or rediss:// URL with a host']);
  });
});

describe('parseConfig ACCESS_LOG', () => {
  it('counts fresh cached hits into a summary by default, lines every request with all, and refuses anything else', () => {
    expect(configWith().accessLog).toBe('summary');
    expect(configWith({ ACCESS_LOG: 'all' }).accessLog).toBe('all');
    expect(configWith({ ACCESS_LOG: 'summary' }).accessLog).toBe('summary');
    expect(problemsWith({ ACCESS_LOG: 'every' })).toEqual(['ACCESS_LOG must be summary or all']);
  });
});

describe('parseConfig subscribe abuse settings (docs/subscribe.md)', () => {
  it('turns surge detection off with SUBSCRIBE_SURGE_PER_MINUTE=0', () => {
    expect(configWith({ SUBSCRIBE_SURGE_PER_MINUTE: '0' }).subscribeSurgePerMinute).toBe(0);
  });

  it('refuses TURNSTILE_MODE=surge without both Turnstile keys, and a mode it does not know', () => {
    expect(problemsWith({ TURNSTILE_MODE: 'surge', TURNSTILE_SECRET_KEY: '0x4-fake-secret' })).toEqual([
      expect.stringMatching(/^TURNSTILE_MODE=surge needs TURNSTILE_SECRET_KEY and TURNSTILE_SITE_KEY/),
    ]);
    expect(problemsWith({ TURNSTILE_MODE: 'sometimes' })).toEqual(['TURNSTILE_MODE must be always or surge']);
  });

  it('reads SUBSCRIBE_BLOCK_DISPOSABLE as true or false only', () => {
    expect(configWith({ SUBSCRIBE_BLOCK_DISPOSABLE: 'TRUE' }).subscribeBlockDisposable).toBe(true);
    expect(configWith({ SUBSCRIBE_BLOCK_DISPOSABLE: 'false' }).subscribeBlockDisposable).toBe(false);
    expect(problemsWith({ SUBSCRIBE_BLOCK_DISPOSABLE: 'maybe' })).toEqual(['SUBSCRIBE_BLOCK_DISPOSABLE must be true or false']);
  });

  it('reads a Worker binding of type boolean for SUBSCRIBE_BLOCK_DISPOSABLE, but refuses null or a list rather than read them as text', () => {
    expect(configWith({ SUBSCRIBE_BLOCK_DISPOSABLE: true }).subscribeBlockDisposable).toBe(true);
    for (const value of [null, ['true'], ['false']]) {
      expect(problemsWith({ SUBSCRIBE_BLOCK_DISPOSABLE: value })).toEqual(['SUBSCRIBE_BLOCK_DISPOSABLE must be true or false']);
    }
  });

  it('refuses an ALERT_WEBHOOK_URL that is not https without echoing it', () => {
    const problems = problemsWith({ ALERT_WEBHOOK_URL: 'http://hooks.example/T000/B000/secret-part' });
    expect(problems).toEqual([expect.stringMatching(/^ALERT_WEBHOOK_URL must be an https URL/)]);
    expect(problems.join('\n')).not.toContain('secret-part');
  });

  it('refuses a DEPLOY_HOOK_URL that is not https, or that carries a user and password, without echoing it', () => {
    for (const url of [
      'http://api.netlify.com/build_hooks/secret-hook-id',
      'https://user:secret-hook-id@hooks.example/build',
      'not a url secret-hook-id',
    ]) {
      const problems = problemsWith({ DEPLOY_HOOK_URL: url });
      expect(problems).toEqual([expect.stringMatching(/^DEPLOY_HOOK_URL must be an https URL .*without a user or password/)]);
      expect(problems.join('\n')).not.toContain('secret-hook-id');
    }
  });

  it('takes a DEPLOY_HOOK_URL on a loopback host over plain http (a local receiver)', () => {
    expect(configWith({ DEPLOY_HOOK_URL: 'http://127.0.0.1:8080/hooks/build' }).deployHookUrl).toBe('http://127.0.0.1:8080/hooks/build');
  });

  it('reads TRUSTED_PROXIES as addresses, networks and names, and names the entries it cannot read', () => {
    const { trustedProxies } = configWith({ TRUSTED_PROXIES: '10.0.0.0/8, 2001:db8::1, loopback' });
    expect(['10.1.2.3', '2001:db8::1', '127.0.0.1', '::1', '::ffff:10.9.9.9'].map((ip) => trustedProxies?.includes(ip))).toEqual([
      true,
      true,
      true,
      true,
      true,
    ]);
    expect(['11.0.0.1', '2001:db8::2', '192.168.1.1'].map((ip) => trustedProxies?.includes(ip))).toEqual([false, false, false]);
    expect(problemsWith({ TRUSTED_PROXIES: '10.0.0.0/33, proxy.example, 10.0.0.1' })).toEqual([
      'TRUSTED_PROXIES has entries that are not addresses, CIDR networks or loopback/linklocal/uniquelocal: 10.0.0.0/33, proxy.example',
    ]);
  });

  it('refuses TRUSTED_PROXIES together with TRUST_PROXY_HOPS', () => {
    expect(problemsWith({ TRUSTED_PROXIES: '10.0.0.1', TRUST_PROXY_HOPS: '1' })).toEqual([
      expect.stringMatching(/^TRUSTED_PROXIES must not be set with TRUST_PROXY_HOPS$/),
    ]);
  });
});
