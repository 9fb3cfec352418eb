import type { Config } from '../config/config.js';
import { createOriginPolicy, listenOrigins, type OriginPolicy } from './origins.js';
import { createRequestIds } from './request-ids.js';

/** OWASP's headers for a JSON answer; the document-only ones change nothing on a body never rendered (docs/security.md). */
export const API_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy': "default-src 'none'; frame-ancestors 'none'",
  'Strict-Transport-Security': 'max-age=15552000; includeSubDomains',
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
};

/** Demo mode's pages: `secureHeaders()` defaults, issue images from any https host, issue HTML in an iframe, Turnstile. */
function siteSecurityHeaders(turnstile: boolean): Readonly<Record<string, string>> {
  const challenge = turnstile ? ' https://challenges.cloudflare.com' : '';
  return {
    ...API_SECURITY_HEADERS,
    'Content-Security-Policy':
      `default-src 'self'; script-src 'self'${challenge}; style-src 'self' 'unsafe-inline'; img-src 'self' https: data:; ` +
      `connect-src 'self'; frame-src 'self'${challenge}; frame-ancestors 'none'; base-uri 'none'; form-action 'self'; object-src 'none'`,
    // no-referrer would make the site's own no-JS form post arrive as `Origin: null` (a 403).
    'Referrer-Policy': 'strict-origin-when-cross-origin',
    'Cross-Origin-Opener-Policy': 'same-origin',
    'Cross-Origin-Resource-Policy': 'same-origin',
    'Origin-Agent-Cluster': '?1',
    'X-DNS-Prefetch-Control': 'off',
    'X-Download-Options': 'noopen',
    'X-Permitted-Cross-Domain-Policies': 'none',
    'X-XSS-Protection': '0',
  };
}

/** The demo archive's `thumbnailUrl`s point here, for sites on other origins too. */
const SITE_EMBEDDABLE_PATH = '/thumbnails/';

export const CORS_POLICY = {
  allowMethods: ['GET', 'HEAD', 'POST', 'OPTIONS'],
  allowHeaders: ['Content-Type', 'Accept', 'If-None-Match'],
  exposeHeaders: ['ETag', 'Retry-After', 'X-Cache', 'X-Request-Id'],
  maxAge: 600,
  credentials: false,
};

const EXPOSE_HEADERS = CORS_POLICY.exposeHeaders.join(',');
const ANY_ORIGIN_GRANT = { 'Access-Control-Allow-Origin': '*', 'Access-Control-Expose-Headers': EXPOSE_HEADERS };
export const INCOMING_REQUEST_ID = /^[\w=-]{1,255}$/;

// Not Hono's middleware (docs/performance.md). In demo mode pages get the site's headers, and its own origin counts: they post to it.
export function createHeaderRules(config: Pick<Config, 'allowedOrigins' | 'host' | 'port' | 'turnstileSiteKey'>, servesSite: boolean) {
  const origins = createOriginPolicy(config.allowedOrigins, servesSite ? listenOrigins(config.host, config.port) : []);
  const siteHeaders = servesSite ? siteSecurityHeaders(config.turnstileSiteKey !== undefined) : undefined;
  const embeddableHeaders = siteHeaders && { ...siteHeaders, 'Cross-Origin-Resource-Policy': 'cross-origin' };
  // The answer depends on the Origin unless every origin gets the same grant.
  const apiHeaders = config.allowedOrigins === '*' ? API_SECURITY_HEADERS : { ...API_SECURITY_HEADERS, Vary: 'Origin' };
  const generateId = createRequestIds();
  return {
    origins,
    requestId: (incoming: string | undefined): string =>
      incoming !== undefined && INCOMING_REQUEST_ID.test(incoming) ? incoming : generateId(),
    headersFor({ path, origin, requestId }: { path: string; origin: string | undefined; requestId: string }): Record<string, string> {
      const isApi = siteHeaders === undefined || path.startsWith('/api/');
      const pageHeaders = path.startsWith(SITE_EMBEDDABLE_PATH) ? embeddableHeaders : siteHeaders;
      const headers: Record<string, string> = { ...(isApi ? apiHeaders : pageHeaders), 'X-Request-Id': requestId };
      return isApi ? Object.assign(headers, corsGrant(origins, origin)) : headers;
    },
  };
}

export type HeaderRules = ReturnType<typeof createHeaderRules>;

/** From the configuration alone, never from `Host`. */
export function corsGrant(origins: OriginPolicy, origin: string | undefined) {
  const granted = origins.granted(origin);
  if (granted === undefined) return undefined;
  return granted === '*' ? ANY_ORIGIN_GRANT : { 'Access-Control-Allow-Origin': granted, 'Access-Control-Expose-Headers': EXPOSE_HEADERS };
}
