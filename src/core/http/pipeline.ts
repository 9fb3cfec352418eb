import type { Context } from 'hono';
import type { PublicRead } from '../reads/public-reads.js';
import type { CacheState, MaybePromise } from '../reads/read-through-cache.js';
import type { StaleReason } from '../upstream/failure-policy.js';
import type { AccessLog } from './access-log.js';
import type { ErrorAnswer, ROUTE_ERRORS, RouteErrorStatus } from './errors.js';
import type { ReadAnswer, SendRead } from './read-reply.js';
import type { RequestHeader } from './request-header.js';
import type { HeaderRules } from './response-headers.js';

declare module 'hono' {
  interface ContextVariableMap {
    /** How a cached read answered by a handler's own Response was answered, for the access log. */
    cacheState: CacheState;
    /** Why such an answer was stale, for the access log's metric. */
    staleReason: StaleReason | undefined;
  }
}

export interface PipelineOptions {
  headerRules: HeaderRules;
  logAccess: AccessLog;
  /** The answer to whatever a handler throws or rejects with (an ApiError's envelope, a 500, …). */
  answerError: (error: unknown, c: Context) => Response;
  requestHeader: RequestHeader;
}

/** A route handler as Hono calls it: a Response at once or its promise. */
// biome-ignore lint/suspicious/noExplicitAny: any route's context, whatever its path and input types
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
    // A cached read answered by its handler carries every header already (core/http/read-reply.ts).
    if (c.get('cacheState') === undefined) {
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
      staleReason: c.get('staleReason'),
    });
    return res;
  }

  const failed = (c: Context, route: string | undefined, startedAt: number) => (error: unknown) =>
    finish(c, answerError(error, c), route, startedAt);

  function wrap<H extends AnyHandler>(handler: H, routeOf: ((c: Context) => string | undefined) | undefined): H {
    // A route's handler answers one route: its template is read once (Hono builds it per call).
    let routed: string | undefined;
    return function answer(c: Context, next: () => Promise<void>) {
      const startedAt = performance.now();
      const route = routeOf === undefined ? (routed ??= c.req.routePath) : routeOf(c);
      c.set('requestId', headerRules.requestId(requestHeader(c, 'x-request-id')));
      let res: ReturnType<H>;
      try {
        res = handler(c, next) as ReturnType<H>;
      } catch (error) {
        return failed(c, route, startedAt)(error);
      }
      if (res instanceof Promise) return res.then((settled) => finish(c, settled ?? c.res, route, startedAt), failed(c, route, startedAt));
      return finish(c, res ?? c.res, route, startedAt);
    } as H;
  }

  /**
   * A route answering cached reads: `handler` hands back the read, which `send` answers with the
   * request id (or a Response of its own, a feed's, after setting `cacheState`). A fresh hit sets
   * nothing on the context and, with ACCESS_LOG=summary, is counted by a counter this route keeps.
   * The answer is typed with the route's error answers (ROUTE_ERRORS), for `hc<AppType>`.
   */
  // biome-ignore lint/suspicious/noExplicitAny: any route's context, whatever its path and input types
  function read<Route extends keyof typeof ROUTE_ERRORS, C extends Context<any, any, any>, T>(
    route: Route,
    send: SendRead,
    handler: (c: C, requestId: string) => MaybePromise<PublicRead<T> | Response>,
  ): (c: C) => MaybePromise<ReadAnswer<T> | ErrorAnswer<RouteErrorStatus<Route>>> {
    type Answer = ReadAnswer<T>;
    // By method and status: GET or HEAD, 200 or 304 (a closed set).
    const counters = new Map<string, ((startedAt: number) => void) | undefined>();
    const counterOf = (method: string, status: number) => {
      const key = method === 'GET' ? (status === 200 ? 'GET 200' : 'GET 304') : `${method} ${status}`;
      let counter = counters.get(key);
      if (counter === undefined && !counters.has(key)) counters.set(key, (counter = logAccess.hitCounter(route, method, status)));
      return counter;
    };

    function answerRead(c: C, result: PublicRead<T> | Response, requestId: string, startedAt: number): Answer {
      if (result instanceof Response) {
        c.set('requestId', requestId);
        return finish(c, result, route, startedAt) as Answer;
      }
      const res = send(c, result, requestId);
      const counter = result.state === 'HIT' ? counterOf(c.req.method, res.status) : undefined;
      if (counter !== undefined) counter(startedAt);
      else
        logAccess({
          method: c.req.method,
          path: c.req.path,
          route,
          status: res.status,
          startedAt,
          cache: result.state,
          requestId,
          staleReason: result.staleReason,
        });
      return res;
    }

    return function answer(c) {
      const startedAt = performance.now();
      const requestId = headerRules.requestId(requestHeader(c, 'x-request-id'));
      let result: MaybePromise<PublicRead<T> | Response>;
      try {
        result = handler(c, requestId);
      } catch (error) {
        c.set('requestId', requestId);
        return failed(c, route, startedAt)(error) as Answer;
      }
      if (!(result instanceof Promise)) return answerRead(c, result, requestId, startedAt);
      return result.then(
        (settled) => answerRead(c, settled, requestId, startedAt),
        (error: unknown) => {
          c.set('requestId', requestId);
          return failed(c, route, startedAt)(error) as Answer;
        },
      );
    };
  }

  return {
    read,
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
