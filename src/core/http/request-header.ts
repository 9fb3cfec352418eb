import type { Context } from 'hono';

export type RequestHeader = (c: Context, name: string) => string | undefined;

export const headerOfRequest: RequestHeader = (c, name) => c.req.header(name);

/** What `node:http` parsed (joined, trimmed and checked), which `c.req.header` would check again. */
export const headerOfIncoming: RequestHeader = (c, name) => {
  const value = (c.env as { incoming: { headers: Record<string, string | string[] | undefined> } }).incoming.headers[name];
  return typeof value === 'string' ? value : undefined;
};
