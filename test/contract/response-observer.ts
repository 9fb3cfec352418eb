/**
 * The seam through which the contract check sees every response of the apps the suites build
 * (test/helpers.ts `createTestApp` passes its app here). Runtime-neutral and inert until an
 * observer is installed: the `node` project's setup file (record-responses.ts) installs one;
 * the `workerd` project, where the validator cannot run (it compiles schemas with `new
 * Function`), installs none.
 */
export type ResponseObserver = (request: Request, response: Response, body: string, bytes: Uint8Array) => void;

const OBSERVER = Symbol.for('newsletter-bff.test.response-observer');

type Fetch = (request: Request, ...rest: never[]) => Response | Promise<Response>;

export function installResponseObserver(observer: ResponseObserver | undefined): void {
  (globalThis as Record<symbol, unknown>)[OBSERVER] = observer;
}

/**
 * Hands each response of `app` (Hono's `request()` goes through `fetch` too) to the observer, if
 * any, and the suite an equal one: the body is read once and given to both, which costs a
 * fraction of `clone()` (a stream tee) on suites that send ten thousand requests.
 */
export function observeResponses<App extends { fetch: Fetch }>(app: App): App {
  const observer = (globalThis as Record<symbol, unknown>)[OBSERVER] as ResponseObserver | undefined;
  if (!observer) return app;
  const fetch = app.fetch;
  app.fetch = (async (request: Request, ...rest: never[]) => {
    const response = await fetch(request, ...rest);
    if (response.body === null) {
      observer(request, response, '', new Uint8Array());
      return response;
    }
    const bytes = await response.arrayBuffer();
    observer(request, response, new TextDecoder().decode(bytes), new Uint8Array(bytes));
    return new Response(bytes, { status: response.status, statusText: response.statusText, headers: response.headers });
  }) as App['fetch'];
  return app;
}
