import { createAdaptorServer, type HttpBindings } from '@hono/node-server';
import type { IncomingMessage, Server, ServerOptions, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Config } from '../core/config/config.js';
import { rateLimitKeyOf } from '../core/http/ip-address.js';

/** What one client may hold of the Node listener (docs/contract.md "Availability under abuse"). */
export interface ServerLimits {
  /** Open connections at once; past it new connections are closed as soon as they are accepted. */
  maxConnections: number;
  /** Open connections at once from one client (see `clientKeyOf`); past it, the same. */
  maxConnectionsPerClient: number;
  /**
   * The client a connection counts for, from its peer address: the rate limits' key (IPv6 by
   * prefix). Undefined: connections are not counted per client (behind a trusted proxy every
   * peer is the proxy, which must cap its own clients).
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
  /** After an early answer, at most this much of the unread body is read and discarded... */
  drainMaxBytes?: number;
  /** ...for at most this long; past either bound the connection is closed. */
  drainTimeoutMs?: number;
}

const DEFAULT_CHECKING_INTERVAL_MS = 2000;
const DEFAULT_KEEP_ALIVE_TIMEOUT_MS = 5000;
const DEFAULT_DRAIN_MAX_BYTES = 64 * 1024;
const DEFAULT_DRAIN_TIMEOUT_MS = 2000;

/** The configured limits (MAX_CONNECTIONS, MAX_CONNECTIONS_PER_CLIENT, the timeouts, the client key). */
export function limitsOf(
  config: Pick<
    Config,
    'maxConnections' | 'maxConnectionsPerClient' | 'headersTimeoutMs' | 'requestTimeoutMs' | 'trustProxyHops' | 'trustedProxies' | 'rateLimitIpv6Prefix'
  >,
): ServerLimits {
  const { trustedProxies } = config;
  return {
    maxConnections: config.maxConnections,
    maxConnectionsPerClient: config.maxConnectionsPerClient,
    // Behind trusted proxies the peer is a proxy: counting it as one client would cap everyone.
    // With TRUSTED_PROXIES a listed peer is uncapped, and any other peer is a client of its own.
    ...(config.trustProxyHops === 0 && {
      clientKeyOf: (address: string) => (trustedProxies?.includes(address) ? undefined : rateLimitKeyOf(address, config.rateLimitIpv6Prefix)),
    }),
    headersTimeoutMs: config.headersTimeoutMs,
    requestTimeoutMs: config.requestTimeoutMs,
  };
}

/** @hono/node-server's `fetch` callback on an HTTP/1 server: its second argument holds the request's objects. */
type NodeFetch = (request: Request, env: HttpBindings) => Response | Promise<Response>;

export interface LimitedServer {
  server: Server;
  /** Whether the listener holds MAX_CONNECTIONS connections (readiness reports it). */
  atConnectionCap: () => boolean;
}

/** @hono/node-server's `serve`, with the limits applied before the first connection is accepted. */
export function serveWithLimits(
  options: {
    fetch: (request: Request, env: object) => Response | Promise<Response>;
    hostname: string;
    port: number;
  },
  limits: ServerLimits,
  onListening?: (info: AddressInfo) => void,
): LimitedServer {
  const server = createAdaptorServer({
    // An HTTP/1 server (no `createServer` of http2): the bindings are always HttpBindings.
    fetch: drainAfterEarlyAnswers(options.fetch as NodeFetch, limits) as (request: Request, env: object) => Response | Promise<Response>,
    hostname: options.hostname,
    // Its drain closes a kept-alive connection 500 ms after an early answer (docs/node-http.md):
    // drainAfterEarlyAnswers does that job instead.
    autoCleanupIncoming: false,
    serverOptions: serverOptionsFor(limits),
  }) as Server;
  server.maxConnections = limits.maxConnections;
  const connections = countConnections(server, limits);
  server.listen(options.port, options.hostname, () => onListening?.(server.address() as AddressInfo));
  return { server, atConnectionCap: () => connections.open() >= limits.maxConnections };
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
 * Counts the listener's open connections, and closes a new one at once when its client already
 * holds `maxConnectionsPerClient`: so one address, however many sockets it opens, leaves the
 * rest of MAX_CONNECTIONS to everyone else. (Node's own `maxConnections` refuses a connection
 * before this sees it.)
 */
function countConnections(server: Server, limits: ServerLimits): { open: () => number } {
  const { maxConnectionsPerClient, clientKeyOf } = limits;
  const perClient = new Map<string, number>();
  let open = 0;
  server.on('connection', (socket: Socket) => {
    open += 1;
    socket.once('close', () => (open -= 1));
    const address = socket.remoteAddress;
    if (clientKeyOf === undefined || address === undefined) return;
    const key = clientKeyOf(address);
    if (key === undefined) return;
    const held = perClient.get(key) ?? 0;
    if (held >= maxConnectionsPerClient) {
      socket.destroy();
      return;
    }
    perClient.set(key, held + 1);
    socket.once('close', () => {
      const left = perClient.get(key)! - 1;
      if (left === 0) perClient.delete(key);
      else perClient.set(key, left);
    });
  });
  return { open: () => open };
}

/**
 * Clean early answers. An answer sent before the request body was read (413, 415, 403, 429, …)
 * must reach the client whole: closing a socket with unread input makes the kernel send a reset,
 * which can destroy the answer before the client reads it, and a client that goes on sending
 * after the close gets one too. So once the answer is ready, the rest of the body is read and
 * discarded (never before the answer: a 429 is not delayed). A body that ends within
 * `drainMaxBytes` and `drainTimeoutMs` leaves the connection kept alive, as the answer said;
 * past the bytes, the server half-closes (the client reads the answer, then end of stream)
 * and goes on discarding until the client closes its side or the time runs out; a client that
 * stalls is cut off when the time runs out. Everything here is the fetch callback's own
 * `incoming`, its socket, and their public events (docs/node-http.md).
 */
function drainAfterEarlyAnswers(fetch: NodeFetch, limits: ServerLimits): NodeFetch {
  const drainMaxBytes = limits.drainMaxBytes ?? DEFAULT_DRAIN_MAX_BYTES;
  const drainTimeoutMs = limits.drainTimeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS;
  return function fetchThenDrain(request, env) {
    const { incoming, outgoing } = env;
    if (incoming.method === 'GET' || incoming.method === 'HEAD') return fetch(request, env);
    const answer = fetch(request, env);
    if (answer instanceof Promise) {
      return answer.then((response) => {
        if (!incoming.complete) drainRestOfBody(incoming, outgoing, drainMaxBytes, drainTimeoutMs);
        return response;
      });
    }
    if (!incoming.complete) drainRestOfBody(incoming, outgoing, drainMaxBytes, drainTimeoutMs);
    return answer;
  };
}

function drainRestOfBody(incoming: IncomingMessage, outgoing: ServerResponse, drainMaxBytes: number, drainTimeoutMs: number): void {
  const socket = incoming.socket;
  let read = 0;
  let closing = false;
  const timer = setTimeout(() => socket.destroy(), drainTimeoutMs);
  timer.unref();
  const stop = () => clearTimeout(timer);
  /** Half-closes once the answer is written; the socket is destroyed when the client closes its side or at the timer. */
  const closeAfterAnswer = () => {
    if (closing) return;
    closing = true;
    if (outgoing.writableFinished) socket.end();
    else outgoing.once('finish', () => socket.end());
    socket.once('end', () => socket.destroy());
  };
  incoming.on('data', (chunk: Buffer) => {
    read += chunk.length;
    if (read > drainMaxBytes) closeAfterAnswer();
  });
  incoming.once('end', () => {
    if (!closing) stop();
  });
  socket.once('close', stop);
  const declared = Number(incoming.headers['content-length']);
  if (Number.isFinite(declared) && declared > drainMaxBytes) closeAfterAnswer();
  // A body a handler began to read and let go of is paused; resumed, its bytes are discarded.
  incoming.resume();
}
