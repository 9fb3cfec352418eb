import type { ExecutionContext, Hono } from 'hono';
import { parseConfig } from './config.js';
import { createLogger } from './log.js';
import { createServiceForConfig } from './service.js';

type Env = Record<string, unknown>;

const GENERIC_ERROR = JSON.stringify({
  ok: false,
  error: { code: 'INTERNAL_ERROR', message: 'The service is not configured correctly.' },
});

// One app per isolate, built on the first request: bindings cannot change within an isolate
// (a deploy starts new ones), and the in-memory cache lives as long as the app.
let built: { app: Hono | undefined } | undefined;

function appFor(env: Env): Hono | undefined {
  if (built) return built.app;
  const log = createLogger({ write: (line) => console.log(line), redact: [stringOrUndefined(env.NEWSLETTER_API_KEY)] });
  const parsed = parseConfig(env);
  if (!parsed.ok) {
    // Logged once per isolate; the visitor gets a generic 500 and never the details.
    for (const problem of parsed.problems) log.log('error', 'config_error', { problem });
    built = { app: undefined };
    return undefined;
  }
  const { app } = createServiceForConfig(parsed.config, {
    log,
    clientIp: (c) => c.req.header('cf-connecting-ip'),
  });
  built = { app: app as unknown as Hono };
  return built.app;
}

function stringOrUndefined(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/** Workers entry: `export default { fetch }` with env bindings and `waitUntil`. */
export default {
  fetch(request: Request, env: Env, ctx: ExecutionContext): Response | Promise<Response> {
    const app = appFor(env);
    if (!app) {
      return new Response(GENERIC_ERROR, {
        status: 500,
        headers: { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' },
      });
    }
    return app.fetch(request, env, ctx);
  },
};
