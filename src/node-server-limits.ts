import { createAdaptorServer } from '@hono/node-server';
import type { IncomingMessage, Server, ServerOptions, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Config } from './config.js';

/** What one client may hold of the Node listener (docs/contract.md "Availability under abuse"). */
export interface ServerLimits {
  /** Open connections at once; past it new connections are closed as soon as they are accepted. */
  maxConnections: number;
  /** Time a client has to send its whole request head. */
  headersTimeoutMs: number;
  /** Time a client has to send its whole request, head and body. */
  requestTimeoutMs: number;
  /** How often Node checks the two timeouts (its default, 30 s, would let a slow head linger 45 s). */
  connectionsCheckingIntervalMs?: number;
  /** An idle keep-alive connection is closed after this long (Node's default, 5 s). */
  keepAliveTimeoutMs?: number;
  /** After an early answer, at most this much of the unread body is read and discarded... */
  drainMaxBytes?: number;
  /** ...for at most this long, before the connection is closed. */
  drainTimeoutMs?: number;
}

const DEFAULT_CHECKING_INTERVAL_MS = 2000;
const DEFAULT_KEEP_ALIVE_TIMEOUT_MS = 5000;
const DEFAULT_DRAIN_MAX_BYTES = 64 * 1024;
const DEFAULT_DRAIN_TIMEOUT_MS = 2000;

/** The configured limits (MAX_CONNECTIONS, HEADERS_TIMEOUT_SECONDS, REQUEST_TIMEOUT_SECONDS). */
export function limitsOf(config: Pick<Config, 'maxConnections' | 'headersTimeoutMs' | 'requestTimeoutMs'>): ServerLimits {
  return { maxConnections: config.maxConnections, headersTimeoutMs: config.headersTimeoutMs, requestTimeoutMs: config.requestTimeoutMs };
}

/** @hono/node-server's `serve`, with the limits applied before the first connection is accepted. */
export function serveWithLimits(
  options: {
    fetch: (request: Request, env: object) => Response | Promise<Response>;
    hostname: string;
    port: number;
    /** How the http server is made (the Node entry puts its fresh-read path in front of the listener). */
    createServer?: typeof import('node:http').createServer;
  },
  limits: ServerLimits,
  onListening?: (info: AddressInfo) => void,
): Server {
  const server = createAdaptorServer({
    fetch: options.fetch,
    hostname: options.hostname,
    autoCleanupIncoming: false,
    serverOptions: serverOptionsFor(limits),
    ...(options.createServer ? { createServer: options.createServer } : {}),
  }) as Server;
  applyServerLimits(server, limits);
  server.listen(options.port, options.hostname, () => onListening?.(server.address() as AddressInfo));
  return server;
}

/** The options `http.createServer` needs for the limits (the checking interval is fixed at creation). */
export function serverOptionsFor(limits: ServerLimits): ServerOptions {
  return {
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    connectionsCheckingInterval: limits.connectionsCheckingIntervalMs ?? DEFAULT_CHECKING_INTERVAL_MS,
    keepAliveTimeout: limits.keepAliveTimeoutMs ?? DEFAULT_KEEP_ALIVE_TIMEOUT_MS,
  };
}

/**
 * Applies the limits to a server created with `serverOptionsFor`: the connection cap, and clean
 * early answers. An answer sent before the request body was read (413, 415, 403, 429, …) must
 * reach the client whole: closing a socket with unread input makes the kernel send a reset,
 * which can destroy the answer before the client reads it. So the body is read and discarded,
 * within bounds, after the answer went out (never before: a 429 is not delayed). When the rest
 * of the body is small and of known length the connection is kept; otherwise the answer says
 * `Connection: close` and the socket is half-closed, drained, then destroyed.
 * (@hono/node-server's own drain, `autoCleanupIncoming`, must be off: it destroys the socket
 * 500 ms later while the answer still promised keep-alive.)
 */
export function applyServerLimits(server: Server, limits: ServerLimits): void {
  server.maxConnections = limits.maxConnections;
  const drainMaxBytes = limits.drainMaxBytes ?? DEFAULT_DRAIN_MAX_BYTES;
  const drainTimeoutMs = limits.drainTimeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS;
  server.prependListener('request', (req: IncomingMessage, res: ServerResponse) => {
    if (req.method === 'GET' || req.method === 'HEAD') return;
    watchForEarlyAnswer(req, res, drainMaxBytes, drainTimeoutMs);
  });
}

function watchForEarlyAnswer(req: IncomingMessage, res: ServerResponse, drainMaxBytes: number, drainTimeoutMs: number): void {
  const writeHead = res.writeHead;
  res.writeHead = function writeHeadAfterCheckingTheBody(this: ServerResponse, ...args: Parameters<typeof writeHead>) {
    res.writeHead = writeHead;
    if (!req.complete) {
      const declared = Number(req.headers['content-length']);
      const keep = Number.isSafeInteger(declared) && declared <= drainMaxBytes && !req.headers['transfer-encoding'];
      if (keep) res.once('finish', () => drainThenKeep(req, drainTimeoutMs));
      else {
        res.setHeader('Connection', 'close');
        if (req.socket) drainThenClose(req.socket, drainMaxBytes, drainTimeoutMs);
        // A body a handler began to read and let go of is paused; resumed, its bytes are discarded.
        res.once('finish', () => req.resume());
      }
    }
    return writeHead.apply(this, args);
  } as typeof writeHead;
}

/** The rest of a small body is read (Node then parses the next request); a client that stalls is cut off. */
function drainThenKeep(req: IncomingMessage, drainTimeoutMs: number): void {
  if (req.complete) return;
  const timer = setTimeout(() => req.socket?.destroy(), drainTimeoutMs);
  timer.unref();
  req.once('end', () => clearTimeout(timer));
  req.once('close', () => clearTimeout(timer));
  req.resume();
}

/**
 * Node ends a `Connection: close` answer with `destroySoon()`, which closes the socket as soon as
 * the answer is written, unread input and all. Here it only half-closes (the client reads the
 * answer and EOF) and the socket goes on reading until the client closes its side, the bytes or
 * the time run out.
 */
function drainThenClose(socket: Socket, drainMaxBytes: number, drainTimeoutMs: number): void {
  socket.destroySoon = function endThenDrain(this: Socket) {
    let read = 0;
    const close = () => {
      clearTimeout(timer);
      socket.destroy();
    };
    const timer = setTimeout(close, drainTimeoutMs);
    timer.unref();
    socket.on('data', (chunk: Buffer) => {
      read += chunk.length;
      if (read > drainMaxBytes) close();
    });
    socket.once('end', close);
    socket.end();
    socket.resume();
  };
}
