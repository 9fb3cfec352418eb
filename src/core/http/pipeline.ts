import type { Context } from 'hono';
import type { PublicRead } from '../reads/public-reads.js';
import type { CacheState, MaybePromise } from '../reads/read-through-cache.js';
import type { StaleReason } from '../upstream/failure-policy.js';
import type { AccessLog } from './access-log.js';
import type { ErrorAnswer, ROUTE_ERRORS, RouteErrorStatus } from './errors.js';
import type { ReadAnswer, RequestHeader, SendRead } from './read-reply.js';
import type { HeaderRules } from './response-headers.js';

declare module 'hono' {
  interface ContextVariableMap {
    requestId: string;
    // How a read answered by the handler's own Response (a feed) was answered, for the access log.
    cacheState: CacheState;
    staleReason: StaleReason | undefined;
  }
}

// biome-ignore lint/suspicious/noExplicitAny: any route's context, whatever its path and input types
type AnyContext = Context<any, any, any>;
type AnyHandler = (c: AnyContext, next: () => Promise<void>) => Response | Promise<Response>;

// Around each handler, not Hono middleware: that returns a promise, and @hono/node-server writes at once only a Response that is not one.
export function createPipeline(options: {
  headerRules: HeaderRules;
  logAccess: AccessLog;
  answerError: (error: unknown, c: Context) => Response;
  requestHeader: RequestHeader;
}) {
  const { headerRules, logAccess, answerError, requestHeader } = options;

  function finish(c: Context, res: Response, route: string | undefined, startedAt: number): Response {
    const cache = c.get('cacheState');
    // A cached read's own Response carries every header already (read-reply.ts).
    if (cache === undefined) {
      const headers = headerRules.headersFor({ path: c.req.path, origin: requestHeader(c, 'origin'), requestId: c.get('requestId') });
      for (const name in headers) {
        // Keep the Vary of Hono's cors() preflight (Origin and the requested headers).
        if (name !== 'Vary' || !res.headers.has('vary')) res.headers.set(name, headers[name]!);
      }
    }
    const { method, path } = c.req;
    const { status } = res;
    logAccess({ method, path, route, status, startedAt, cache, requestId: c.get('requestId'), staleReason: c.get('staleReason') });
    return res;
  }

  const requestIdOf = (c: Context) => headerRules.requestId(requestHeader(c, 'x-request-id'));
  const failed = (c: Context, route: string | undefined, startedAt: number, requestId: string) => (error: unknown) => {
    c.set('requestId', requestId);
    return finish(c, answerError(error, c), route, startedAt) as ReadAnswer<never>;
  };

  function route<H extends AnyHandler>(handler: H, routeOf = (c: Context): string | undefined => c.req.routePath): H {
    return async function answer(c: Context, next: () => Promise<void>) {
      const startedAt = performance.now();
      const route = routeOf(c);
      c.set('requestId', requestIdOf(c));
      try {
        return finish(c, await handler(c, next), route, startedAt);
      } catch (error) {
        return failed(c, route, startedAt, c.get('requestId'))(error);
      }
    } as H;
  }

  function read<Route extends keyof typeof ROUTE_ERRORS, C extends AnyContext, T>(
    route: Route,
    send: SendRead,
    handler: (c: C, requestId: string) => MaybePromise<PublicRead<T> | Response>,
  ): (c: C) => MaybePromise<ReadAnswer<T> | ErrorAnswer<RouteErrorStatus<Route>>> {
    // ACCESS_LOG=summary's hit tallies by method and status (GET or HEAD, 200 or 304); false: not counted.
    const counters: (ReturnType<AccessLog['hitCounter']> | undefined)[] = [undefined, undefined, undefined, undefined];
    const counterOf = (method: string, status: number) =>
      (counters[(method === 'GET' ? 0 : 2) + (status === 200 ? 0 : 1)] ??= logAccess.hitCounter(route, method, status));

    function answerRead(c: C, result: PublicRead<T> | Response, requestId: string, startedAt: number) {
      if (result instanceof Response) {
        c.set('requestId', requestId);
        return finish(c, result, route, startedAt) as ReadAnswer<T>;
      }
      const res = send(c, result, requestId);
      const { method, path } = c.req;
      const counter = result.state === 'HIT' && counterOf(method, res.status);
      if (counter) logAccess.countHit(counter, startedAt);
      else
        logAccess({ method, path, route, status: res.status, startedAt, cache: result.state, requestId, staleReason: result.staleReason });
      return res;
    }

    // No closure on a synchronous answer: a fresh hit makes none.
    return function answer(c) {
      const startedAt = performance.now();
      const requestId = requestIdOf(c);
      try {
        const result = handler(c, requestId);
        if (!(result instanceof Promise)) return answerRead(c, result, requestId, startedAt);
        return result.then((settled) => answerRead(c, settled, requestId, startedAt), failed(c, route, startedAt, requestId));
      } catch (error) {
        return failed(c, route, startedAt, requestId)(error);
      }
    };
  }

  return {
    read,
    route,
    /** The same as Hono middleware, first of subscribe's handlers (its guards run before the body is read). */
    layer: route(async function answerThrough(c: Context, next: () => Promise<void>) {
      await next();
      return c.res;
    }),
  };
}

export type Pipeline = ReturnType<typeof createPipeline>;
