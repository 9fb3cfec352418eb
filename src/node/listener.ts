import { getRequestListener, RequestError, type HttpBindings } from '@hono/node-server';
import type { Context } from 'hono';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerOptions, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Config } from '../core/config/config.js';
import { rateLimitKeyOf } from '../core/http/ip-address.js';
import type { ConnectionShedReason } from '../core/metrics.js';
import { shedConnections } from './connection-shedding.js';

/** How the Node listener holds its connections (docs/contract.md "Availability under abuse"). */
export interface ServerLimits {
  /** Connections held before new ones make room (node-connection-shedding.ts); Node refuses past `hardCeiling(maxConnections)`. */
  maxConnections: number;
  /**
   * The client a connection counts for, from its peer address: the rate limits' key (IPv6 by
   * prefix). Undefined: no connection counts for a client (behind a trusted proxy every peer is
   * the proxy, which must cap its own clients).
   */
  clientKeyOf?: (address: string) => string | undefined;
  /** Time a client has to send its whole request head. */
  headersTimeoutMs: number;
  /** Time a client has to send its whole request, head and body. */
  requestTimeoutMs: number;
  /** How often Node checks the two timeouts (its default, 30 s, would let a slow head linger 45 s). */
  connectionsCheckingIntervalMs?: number;
  /** An idle keep-alive connection is closed after this long (Node's default, 5 s). */
  keepAliveTimeoutMs?: number;
  /** Near the cap, a kept-alive connection idle this long may be closed to make room (the last resort). */
  idleGraceMs?: number;
  /** Near the cap, a connection without a whole request head after this long may be closed to make room. */
  slowHeadGraceMs?: number;
  /** Near the cap, a fresh connection of the address holding the most may be closed once this old. */
  overShareAfterMs?: number;
  /** How long after its last shed the listener still reports shedding. */
  sheddingReportMs?: number;
  /** After an early answer, a body declared this long or shorter is read and the connection kept... */
  drainMaxBytes?: number;
  /** ...if it ends within this long; a connection closed after an answer is read this long at most. */
  drainTimeoutMs?: number;
}

const DEFAULT_CHECKING_INTERVAL_MS = 2000;
const DEFAULT_KEEP_ALIVE_TIMEOUT_MS = 5000;
const DEFAULT_IDLE_GRACE_MS = 1000;
const DEFAULT_SLOW_HEAD_GRACE_MS = 2000;
const DEFAULT_OVER_SHARE_AFTER_MS = 250;
const RECHECK_MS = 100;
const DEFAULT_SHEDDING_REPORT_MS = 10_000;
const DEFAULT_DRAIN_MAX_BYTES = 64 * 1024;
const DEFAULT_DRAIN_TIMEOUT_MS = 2000;

/**
 * Node's own `maxConnections`: past it a connection is closed on accept, before the listener sees
 * it. An eighth above MAX_CONNECTIONS (at least 16): room for connections that arrive while every
 * held one has a request in flight, which are answered and closed rather than refused.
 */
export function hardCeiling(maxConnections: number): number {
  return maxConnections + Math.max(16, Math.ceil(maxConnections / 8));
}

/** The configured limits (MAX_CONNECTIONS, the timeouts, the client key). */
export function limitsOf(
  config: Pick<
    Config,
    'maxConnections' | 'headersTimeoutMs' | 'requestTimeoutMs' | 'trustProxyHops' | 'trustedProxies' | 'rateLimitIpv6Prefix'
  >,
): ServerLimits {
  const { trustedProxies } = config;
  return {
    maxConnections: config.maxConnections,
    // Behind trusted proxies the peer is a proxy: counting it as one client would put everyone over share.
    // With TRUSTED_PROXIES a listed peer counts for no client, and any other peer is a client of its own.
    ...(config.trustProxyHops === 0 && {
      clientKeyOf: (address: string) =>
        trustedProxies?.includes(address) ? undefined : rateLimitKeyOf(address, config.rateLimitIpv6Prefix),
    }),
    headersTimeoutMs: config.headersTimeoutMs,
    requestTimeoutMs: config.requestTimeoutMs,
  };
}

/** @hono/node-server's `fetch` callback on an HTTP/1 server: its second argument holds the request's objects. */
type NodeFetch = (request: Request, env: HttpBindings) => Response | Promise<Response>;

export interface LimitedServer {
  server: Server;
  /** Whether the listener is shedding connections (readiness reports it). */
  shedding: () => boolean;
}

export interface ServeOptions {
  fetch: (request: Request, env: object) => Response | Promise<Response>;
  /** The app's answer to a stand-in for a request the adapter could not read (`createApp`'s `refuse`). */
  refuse: (request: Request) => Response | Promise<Response>;
  hostname: string;
  port: number;
  /** How the http server is made (the Node entry may put a request listener in front of ours). */
  createServer?: typeof createServer;
  /** Told of each connection closed to make room (the metric). */
  onShed?: (reason: ConnectionShedReason) => void;
}

/**
 * The public listener: @hono/node-server's request listener (`getRequestListener`, with its
 * `errorHandler` and `autoCleanupIncoming` options) on a `node:http` server with the limits
 * applied before the first connection is accepted, connections shed near the cap, and clean,
 * honest early answers. Public APIs only (docs/node-http.md "Public APIs only").
 */
export function serveWithLimits(options: ServeOptions, limits: ServerLimits, onListening?: (info: AddressInfo) => void): LimitedServer {
  const drainMaxBytes = limits.drainMaxBytes ?? DEFAULT_DRAIN_MAX_BYTES;
  const drainTimeoutMs = limits.drainTimeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS;
  /** Sockets closing after an answer: a request read on one after that is not run. */
  const closing = new WeakSet<Socket>();
  /** The request the adapter's listener is handling, for `errorHandler` (see `readingNow`). */
  let readingNow: HttpBindings | undefined;

  const finish = (response: Response, bindings: HttpBindings) =>
    finishEarlyAnswer(response, bindings, closing, drainMaxBytes, drainTimeoutMs);
  // An HTTP/1 server (no http2 `createServer`): the bindings are always HttpBindings.
  const adapterListener = getRequestListener(
    fetchThenFinish(options.fetch as NodeFetch, finish) as (request: Request, env: object) => Promise<Response> | Response,
    {
      hostname: options.hostname,
      // Its drain closes a kept-alive connection 500 ms after an early answer (docs/node-http.md):
      // finishEarlyAnswer does that job instead.
      autoCleanupIncoming: false,
      errorHandler: (error) => answerUnreadable(error, readingNow, options.refuse, finish),
    },
  );

  let shedding: ReturnType<typeof shedConnections> | undefined;
  const listener: RequestListener = function serveRequest(incoming, outgoing) {
    // The connection said close already: this request was pipelined behind that answer.
    if (closing.has(incoming.socket)) return void incoming.resume();
    // Above the cap a connection is not kept for another request: its answer makes room.
    if (shedding?.overCap()) outgoing.setHeader('Connection', 'close');
    // The adapter calls errorHandler, when it cannot read the request, before its first await.
    readingNow = { incoming, outgoing };
    try {
      return adapterListener(incoming, outgoing);
    } finally {
      readingNow = undefined;
    }
  };
  const server = (options.createServer ?? createServer)(serverOptionsFor(limits), listener);
  server.maxConnections = hardCeiling(limits.maxConnections);
  shedding = shedConnections(server, {
    maxConnections: limits.maxConnections,
    clientKeyOf: limits.clientKeyOf,
    idleGraceMs: limits.idleGraceMs ?? DEFAULT_IDLE_GRACE_MS,
    slowHeadGraceMs: limits.slowHeadGraceMs ?? DEFAULT_SLOW_HEAD_GRACE_MS,
    overShareAfterMs: limits.overShareAfterMs ?? DEFAULT_OVER_SHARE_AFTER_MS,
    recheckMs: Math.min(RECHECK_MS, limits.overShareAfterMs ?? DEFAULT_OVER_SHARE_AFTER_MS),
    reportMs: limits.sheddingReportMs ?? DEFAULT_SHEDDING_REPORT_MS,
    onShed: options.onShed,
  });
  server.listen(options.port, options.hostname, () => onListening?.(server.address() as AddressInfo));
  const held = shedding;
  return { server, shedding: () => held.isShedding() };
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

type Finish = (response: Response, bindings: HttpBindings) => Response | Promise<Response>;

/** The app's answer, then, for a body not read whole, what becomes of the rest (finishEarlyAnswer). */
function fetchThenFinish(fetch: NodeFetch, finish: Finish): NodeFetch {
  return function fetchThenFinishEarly(request, bindings) {
    const answer = fetch(request, bindings);
    // A GET or HEAD has no body to speak of: Node discards one after the answer.
    if (bindings.incoming.method === 'GET' || bindings.incoming.method === 'HEAD') return answer;
    return answer instanceof Promise ? answer.then((response) => finish(response, bindings)) : finish(answer, bindings);
  };
}

/**
 * Clean, honest early answers. An answer ready before the request body was read (413, 415, 403,
 * 429, …) must reach the client whole, at once, and say truly whether the connection serves
 * another request:
 *
 * - a body declared `drainMaxBytes` or shorter is read and discarded after the answer, which
 *   keeps the connection (Node parses the next request after it); a client that stalls is cut
 *   off after `drainTimeoutMs`;
 * - any other (chunked, longer, or the listener above its cap) is answered with
 *   `Connection: close`, written here: Node closes a connection whose answer says so as soon as
 *   it is written, and closing a socket with unread input makes the kernel send a reset, which
 *   can destroy the answer in the client's buffer. So the answer is written, the server
 *   half-closes (the client reads the answer, then end of stream), goes on reading until the
 *   client closes its side, and destroys the socket after `drainTimeoutMs` at most.
 *
 * Every listener and timer here is on the request's own objects, or on a socket that closes
 * with this answer: nothing accumulates on a connection that carries thousands of requests.
 */
function finishEarlyAnswer(
  response: Response,
  bindings: HttpBindings,
  closing: WeakSet<Socket>,
  drainMaxBytes: number,
  drainTimeoutMs: number,
): Response | Promise<Response> {
  const { incoming, outgoing } = bindings;
  if (incoming.complete) return response;
  const saysClose = String(outgoing.getHeader('connection') ?? '').toLowerCase() === 'close';
  if (!saysClose && declaredLength(incoming) <= drainMaxBytes) {
    const timer = setTimeout(() => incoming.socket.destroy(), drainTimeoutMs);
    timer.unref();
    const stop = () => clearTimeout(timer);
    incoming.once('end', stop);
    incoming.once('close', stop);
    // A body a handler began to read and let go of is paused; resumed, its bytes are discarded.
    incoming.resume();
    return response;
  }
  return answerThenClose(response, incoming, outgoing, closing, drainTimeoutMs);
}

/** A body's declared length; infinite when chunked or unreadable (it could be any length). */
function declaredLength(incoming: IncomingMessage): number {
  if (incoming.headers['transfer-encoding'] !== undefined) return Number.POSITIVE_INFINITY;
  const declared = Number(incoming.headers['content-length'] ?? 0);
  return Number.isSafeInteger(declared) ? declared : Number.POSITIVE_INFINITY;
}

/** Writes `response` with `Connection: close`, half-closes, reads until the client closes (docs/node-http.md "Clean early answers"). */
async function answerThenClose(
  response: Response,
  incoming: IncomingMessage,
  outgoing: ServerResponse,
  closing: WeakSet<Socket>,
  drainTimeoutMs: number,
): Promise<Response> {
  const body = new Uint8Array(await response.arrayBuffer());
  const socket = incoming.socket;
  if (socket.destroyed) return RESPONSE_ALREADY_SENT;
  const headers: string[] = [];
  response.headers.forEach((value, name) => {
    if (name !== 'content-length' && name !== 'connection' && name !== 'transfer-encoding') headers.push(name, value);
  });
  headers.push('Content-Length', String(body.byteLength), 'Connection', 'close');
  closing.add(socket);
  const timer = setTimeout(() => socket.destroy(), drainTimeoutMs);
  timer.unref();
  // This socket carries nothing after this answer: one listener on it, once.
  socket.once('close', () => clearTimeout(timer));
  outgoing.writeHead(response.status, headers);
  outgoing.write(body);
  // Not `outgoing.end()`: Node would destroy the socket once the answer is written.
  socket.end();
  incoming.resume();
  // The adapter's own marker: it writes nothing more. (Made when its module loads, before
  // getRequestListener replaces the global Response, as the adapter's check of it needs.)
  return RESPONSE_ALREADY_SENT;
}

/**
 * The adapter's `errorHandler`: a request Node parsed but @hono/node-server cannot make a
 * Request of (a Host or path it refuses) is answered by the app (`refuse`: 400 `BAD_REQUEST`,
 * its headers and access line) from a stand-in with the request's method, a path safe to parse
 * and the headers the answer depends on, then finished like any early answer. `reading` is the
 * request the listener is handling: the adapter calls this before its first await (a test pins
 * it); were that to change, the stand-in would still be answered, as `GET /`, kept alive.
 */
async function answerUnreadable(
  error: unknown,
  reading: HttpBindings | undefined,
  refuse: ServeOptions['refuse'],
  finish: Finish,
): Promise<Response> {
  // The app's own fetch answers its errors; nothing else reaches here, but it must not throw.
  if (!(error instanceof RequestError)) return new Response(null, { status: 500 });
  const response = await refuse(standInFor(reading?.incoming));
  return reading ? finish(response, reading) : response;
}

/** Request-target characters kept as sent in the stand-in's path; any other is percent-encoded. */
const UNSAFE_IN_PATH = /[^A-Za-z0-9\-._~!$&'()*+,;=:@/%]/g;

function standInFor(incoming: IncomingMessage | undefined): Request {
  const target = incoming?.url ?? '/';
  const path = target.startsWith('/') ? target.split('?')[0]!.replace(UNSAFE_IN_PATH, encodeURIComponent) : '/';
  const headers = new Headers();
  for (const name of ['origin', 'x-request-id']) {
    const value = incoming?.headers[name];
    if (typeof value === 'string') {
      try {
        headers.set(name, value);
      } catch {
        // A value Headers refuses is left out: the answer is the same without it.
      }
    }
  }
  const url = `http://localhost${path}`;
  try {
    return new Request(url, { method: incoming?.method ?? 'GET', headers });
  } catch {
    // A method a Request cannot carry (CONNECT, TRACE): answered all the same.
    return new Request(url, { headers });
  }
}

/**
 * Whether the listener's REQUEST_TIMEOUT_SECONDS cut this request off. Node then answers 408
 * itself and destroys the socket with ERR_HTTP_REQUEST_TIMEOUT; the body read reports only
 * "aborted", as for a client that hung up. The socket's public `errored` tells the two apart, so
 * the access log and the metrics say 408, not 499 (docs/node-http.md).
 */
export function timedOutByListener(c: Context): boolean {
  const socket = (c.env as Partial<HttpBindings> | undefined)?.incoming?.socket;
  return (socket?.errored as NodeJS.ErrnoException | null | undefined)?.code === 'ERR_HTTP_REQUEST_TIMEOUT';
}
