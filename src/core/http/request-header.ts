import type { Context } from 'hono';

/** A request header by its lower-case name, joined with `, ` when sent more than once; undefined when absent. */
export type RequestHeader = (c: Context, name: string) => string | undefined;

/** Hono's own reading: the Request's headers (Workers, tests). */
export const headerOfRequest: RequestHeader = (c, name) => c.req.header(name);

/**
 * Node's reading: the headers object `node:http` has parsed already (@hono/node-server reads the
 * host from it to build the URL), where `c.req.header` first checks the name and value again.
 * The same answer for every header this service reads: Node joins repeated ones with `, `, as
 * the Fetch standard does, and its parser has trimmed them and refused control characters.
 */
export const headerOfIncoming: RequestHeader = (c, name) => {
  const value = (c.env as { incoming: { headers: Record<string, string | string[] | undefined> } }).incoming.headers[name];
  return typeof value === 'string' ? value : undefined;
};
