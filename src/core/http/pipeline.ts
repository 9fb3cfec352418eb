import type { Context } from 'hono';
import type { AccessLog } from './access-log.js';
import type { RequestHeader } from './request-header.js';
import type { HeaderRules } from './response-headers.js';

export interface PipelineOptions {
  headerRules: HeaderRules;
  logAccess: AccessLog;
  /** The answer to whatever a handler throws or rejects with (an ApiError's envelope, a 500, …). */
  answerError: (error: unknown, c: Context) => Response;
  requestHeader: RequestHeader;
}

/** A route handler as Hono calls it: a Response at once (a fresh cached read) or its promise. */
type AnyHandler = (c: Context<any, any, any>, next: () => Promise<void>) => Response | Promise<Response | void> | void;

/**
 * What every answer goes through: its request id, the headers every response carries (security
 * headers, `X-Request-Id`, the CORS grant: createHeaderRules), errors turned into their answers,
 * and the access log. Each route's handler is wrapped in it, rather than preceded by Hono
 * middleware, because Hono composes middleware with promises: every answer would wait for a turn
 * of the microtask queue per layer, and @hono/node-server writes a Response it is handed at once
 * only when it is not a promise. So a handler that has its answer at once (a fresh cached read)
 * gets it written at once; one that waits (a load, subscribe) is finished when it settles.
 */
export function createPipeline(options: PipelineOptions) {
  const { headerRules, logAccess, answerError, requestHeader } = options;

  function finish(c: Context, res: Response, route: string | undefined, startedAt: number): Response {
    // Cached reads are built with every header already (core/http/read-reply.ts); the others get them here.
    if (c.get('responseHeadersApplied') !== true) {
      const headers = headerRules.headersFor({ path: c.req.path, origin: requestHeader(c, 'origin'), requestId: c.get('requestId') });
      const target = res.headers;
      for (const name in headers) {
        // Hono's cors() has answered a preflight: keep its Vary (Origin and the requested headers).
        if (name === 'Vary' && target.has('vary')) continue;
        target.set(name, headers[name]!);
      }
    }
    logAccess({
      method: c.req.method,
      path: c.req.path,
      route,
      status: res.status,
      startedAt,
      cache: c.get('cacheState'),
      requestId: c.get('requestId'),
    });
    return res;
  }

  function wrap<H extends AnyHandler>(handler: H, routeOf: ((c: Context) => string | undefined) | undefined): H {
    // A route's handler answers one route: its template is read once (Hono builds it per call).
    let routed: string | undefined;
    return function answer(c: Context, next: () => Promise<void>) {
      const startedAt = performance.now();
      const route = routeOf === undefined ? (routed ??= c.req.routePath) : routeOf(c);
      c.set('requestId', headerRules.requestId(requestHeader(c, 'x-request-id')));
      let res;
      try {
        res = handler(c, next);
      } catch (error) {
        return finish(c, answerError(error, c), route, startedAt);
      }
      if (res instanceof Promise) {
        return res.then(
          (settled) => finish(c, settled ?? c.res, route, startedAt),
          (error: unknown) => finish(c, answerError(error, c), route, startedAt),
        );
      }
      return finish(c, res ?? c.res, route, startedAt);
    } as H;
  }

  return {
    /**
     * The same as Hono middleware, first of a route of several handlers (subscribe: its guards
     * run before its body is read); an error in them has been answered by the app's error
     * handler by the time `next` returns.
     */
    layer: async function answerThrough(c: Context, next: () => Promise<void>): Promise<void> {
      const startedAt = performance.now();
      c.set('requestId', headerRules.requestId(requestHeader(c, 'x-request-id')));
      await next();
      finish(c, c.res, c.req.routePath, startedAt);
    },
    /** `handler` of a route, with everything every answer gets. */
    route: <H extends AnyHandler>(handler: H): H => wrap(handler, undefined),
    /**
     * The answer to a request no route matched (404, 405, the demo site's pages), with the same;
     * `routeOf` names the route template it is logged and counted under, if any.
     */
    unrouted: <H extends AnyHandler>(handler: H, routeOf: (c: Context) => string | undefined): H => wrap(handler, routeOf),
  };
}

/** The pipeline's wrappers (createPipeline). */
export type Pipeline = ReturnType<typeof createPipeline>;
