import type { Context, MiddlewareHandler } from 'hono';
import type { OriginPolicy } from './origins.js';
import { createRequestIds } from './request-ids.js';

declare module 'hono' {
  interface ContextVariableMap {
    requestId: string;
    /** Every header this request's response carries besides its own (see createResponseHeaders). */
    responseHeaders: Readonly<Record<string, string>>;
    /** Set by `respond`: the response was built with `responseHeaders` already. */
    responseHeadersApplied: true;
  }
}

/**
 * The security headers a browser acts on for a JSON response, OWASP's set for REST answers: it
 * is never sniffed, framed or run, and only over HTTPS. CORS alone decides which origins may read
 * it. The document-only headers (DOCUMENT_SECURITY_HEADERS: `Referrer-Policy`,
 * `Cross-Origin-Resource-Policy` and the rest of `secureHeaders()`'s) are left to HTML pages: on
 * a body that is never rendered they change nothing, and each line costs a cached hit time
 * (docs/security.md).
 */
export const API_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy': "default-src 'none'; frame-ancestors 'none'",
  'Strict-Transport-Security': 'max-age=15552000; includeSubDomains',
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
};

/** What Hono's `secureHeaders()` adds for documents (its defaults), for HTML pages such as the demo site. */
export const DOCUMENT_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  ...API_SECURITY_HEADERS,
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
  'Origin-Agent-Cluster': '?1',
  'X-DNS-Prefetch-Control': 'off',
  'X-Download-Options': 'noopen',
  'X-Permitted-Cross-Domain-Policies': 'none',
  'X-XSS-Protection': '0',
};

/** The CORS policy of the four routes: Hono's `cors()` answers preflights with it, `corsGrant` the requests. */
export const CORS_POLICY = {
  allowMethods: ['GET', 'HEAD', 'POST', 'OPTIONS'],
  allowHeaders: ['Content-Type', 'Accept', 'If-None-Match'],
  exposeHeaders: ['ETag', 'Retry-After', 'X-Cache', 'X-Request-Id'],
  maxAge: 600,
  credentials: false,
};

const EXPOSE_HEADERS = CORS_POLICY.exposeHeaders.join(',');
/** An incoming `X-Request-Id` is kept when it is this safe (as Hono's `requestId()` does). */
export const INCOMING_REQUEST_ID = /^[\w=-]{1,255}$/;

export interface ResponseHeadersOptions {
  allowedOrigins: '*' | readonly string[];
  origins: OriginPolicy;
  /** Security headers of paths outside /api/ (the demo site); without it, the API's everywhere. */
  siteSecurityHeaders?: Readonly<Record<string, string>>;
  /** Path prefixes of the site whose files pages on other origins may embed (`Cross-Origin-Resource-Policy: cross-origin`). */
  siteEmbeddablePaths?: readonly string[];
  /** New request ids (default `createRequestIds()`: 128 random bits as hex, unguessable and telling nothing of traffic). */
  generateId?: () => string;
}

/** What the headers of one request's response depend on, as every entry point can read it. */
export interface HeaderFacts {
  path: string;
  /** The `Origin` request header, if any. */
  origin: string | undefined;
  /** The request id this response carries (see `requestId`). */
  requestId: string;
}

/**
 * The headers every response carries besides its own — security headers, `X-Request-Id`, the
 * CORS grant — for the general pipeline (createResponseHeaders) and Node's fresh-read path alike.
 */
export interface HeaderRules {
  /** An incoming `X-Request-Id` when it is safe to echo, else a new one. */
  requestId(incoming: string | undefined): string;
  headersFor(facts: HeaderFacts): Record<string, string>;
  /**
   * The origin an API answer to this `Origin` grants (`*`, the origin itself) or `undefined`:
   * besides the request id, the one thing of a request an API answer's headers depend on.
   */
  grantedOrigin(origin: string | undefined): string | undefined;
}

export function createHeaderRules(options: ResponseHeadersOptions): HeaderRules {
  const { allowedOrigins, origins, siteSecurityHeaders, siteEmbeddablePaths = [], generateId = createRequestIds() } = options;
  const embeddableHeaders = siteSecurityHeaders && { ...siteSecurityHeaders, 'Cross-Origin-Resource-Policy': 'cross-origin' };
  // The answer depends on the Origin unless every origin gets the same grant.
  const apiHeaders = allowedOrigins === '*' ? API_SECURITY_HEADERS : { ...API_SECURITY_HEADERS, Vary: 'Origin' };
  return {
    requestId: (incoming) => (incoming !== undefined && INCOMING_REQUEST_ID.test(incoming) ? incoming : generateId()),
    grantedOrigin: (origin) => grantedOrigin(origins, origin),
    headersFor({ path, origin, requestId }) {
      const isApi = siteSecurityHeaders === undefined || path.startsWith('/api/');
      const grant = isApi ? corsGrant(origins, origin) : undefined;
      // Object.assign, not spreads: a spread of these records cost ten times as much per request.
      const siteHeaders = siteEmbeddablePaths.some((prefix) => path.startsWith(prefix)) ? embeddableHeaders : siteSecurityHeaders;
      const headers: Record<string, string> = Object.assign({}, isApi ? apiHeaders : siteHeaders);
      headers['X-Request-Id'] = requestId;
      return grant ? Object.assign(headers, grant) : headers;
    },
  };
}

/**
 * Puts every header a response needs (createHeaderRules) into one plain record before the
 * handler runs. Why not Hono's own (docs/performance.md "Hono's header middlewares"):
 * `cors()` writes to `c.res` before the handler, so Hono rebuilds the response from its body
 * stream and @hono/node-server leaves its fast path; `requestId()`'s `c.header()` is lost on a
 * handler's own `Response`; `secureHeaders()` costs a layer for headers this record already has.
 * Cached reads are built with the record by `respond` and left untouched; every other response
 * gets the headers set here.
 */
export function createResponseHeaders(rules: HeaderRules): MiddlewareHandler {
  return async function setResponseHeaders(c, next) {
    const id = rules.requestId(c.req.header('x-request-id'));
    c.set('requestId', id);
    const headers = rules.headersFor({
      path: c.req.path,
      origin: c.req.header('origin'),
      requestId: id,
    });
    c.set('responseHeaders', headers);

    await next();

    if (c.get('responseHeadersApplied')) return;
    const target = c.res.headers;
    for (const name in headers) {
      // Hono's cors() has answered a preflight: keep its Vary (Origin and the requested headers).
      if (name === 'Vary' && target.has('vary')) continue;
      target.set(name, headers[name]!);
    }
  };
}

/**
 * The CORS grant of a request with this `Origin` header: the one decision every response and
 * preflight uses. `*` for any origin, the allowed origin echoed (never with credentials), or
 * none. Decided from the configuration alone, never from `Host` or the request target.
 */
export function corsGrant(origins: OriginPolicy, origin: string | undefined) {
  const granted = grantedOrigin(origins, origin);
  if (granted === undefined) return undefined;
  return granted === '*' ? ANY_ORIGIN_GRANT : { 'Access-Control-Allow-Origin': granted, 'Access-Control-Expose-Headers': EXPOSE_HEADERS };
}

/** `Access-Control-Allow-Origin` of `corsGrant`, without building the grant. */
function grantedOrigin(origins: OriginPolicy, origin: string | undefined): string | undefined {
  if (origins.anyOrigin) return '*';
  return origin && origins.isAllowed(origin) ? origin : undefined;
}

const ANY_ORIGIN_GRANT: Readonly<Record<string, string>> = {
  'Access-Control-Allow-Origin': '*',
  'Access-Control-Expose-Headers': EXPOSE_HEADERS,
};

/**
 * A response that already carries this request's headers, as a plain record: @hono/node-server
 * writes such a response straight to the socket (a `Headers` object would be converted back).
 */
export function respond(
  c: Context,
  body: string | Uint8Array<ArrayBuffer> | null,
  status: number,
  headers: Record<string, string>,
): Response {
  c.set('responseHeadersApplied', true);
  return new Response(body, { status, headers: Object.assign({}, c.get('responseHeaders'), headers) });
}
