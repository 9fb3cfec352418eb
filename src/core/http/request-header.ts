import type { Context } from 'hono';

/** A request header by its lower-case name, joined with `, ` when sent more than once; undefined when absent. */
export type RequestHeader = (c: Context, name: string) => string | undefined;

/** Hono's own reading: the Request's headers (Workers, tests). */
export const headerOfRequest: RequestHeader = (c, name) => c.req.header(name);

/**
 * Node's reading: the headers `node:http` has parsed, which `c.req.header` would check again. The same
 * answer for every header this service reads: Node joins repeats with `, ` and has trimmed and checked them.
 */
export const headerOfIncoming: RequestHeader = (c, name) => {
  const value = (c.env as { incoming: { headers: Record<string, string | string[] | undefined> } }).incoming.headers[name];
  return typeof value === 'string' ? value : undefined;
};
