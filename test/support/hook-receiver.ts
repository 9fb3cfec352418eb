import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One call a build hook receiver took. */
export interface HookCall {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The body as sent. */
  raw: string;
  /** The body parsed as JSON (undefined when it is not JSON). */
  body: { event?: string; counts?: Record<string, number>; changes?: { slug: string; kind: string }[]; more?: number } | undefined;
  /** The status it answered. */
  status: number;
}

/**
 * A build hook receiver on 127.0.0.1 and an ephemeral port, as Netlify, Vercel or Cloudflare
 * Pages would be: it records every call and answers each with the next of `statuses` (200 once
 * they run out). `onCall` runs before the answer, as a build that starts at once would.
 */
export async function startHookReceiver(options: { statuses?: number[]; onCall?: (call: HookCall) => Promise<void> | void } = {}) {
  const statuses = [...(options.statuses ?? [])];
  const calls: HookCall[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: HookCall['body'];
      try {
        body = JSON.parse(raw) as HookCall['body'];
      } catch {
        body = undefined;
      }
      const call: HookCall = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        raw,
        body,
        status: statuses.shift() ?? 200,
      };
      calls.push(call);
      void Promise.resolve(options.onCall?.(call)).finally(() => {
        res.writeHead(call.status, { 'Content-Type': 'application/json' }).end('{}');
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    /** A hook URL with a token in its path, as real ones have: it must never be logged whole. */
    url: `http://127.0.0.1:${port}/build_hooks/hook-token-5f1e-not-real`,
    token: 'hook-token-5f1e-not-real',
    origin: `http://127.0.0.1:${port}`,
    calls,
    async stop(): Promise<void> {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export type HookReceiver = Awaited<ReturnType<typeof startHookReceiver>>;
