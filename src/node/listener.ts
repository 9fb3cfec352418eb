import { getRequestListener, RequestError, type HttpBindings } from '@hono/node-server';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import type { Context } from 'hono';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Config } from '../core/config/config.js';
import { rateLimitKeyOf } from '../core/http/ip-address.js';
import type { ConnectionShedReason } from '../core/metrics.js';

/** The limits tests set smaller; what each means: docs/node-http.md. */
const DEFAULTS = {
  connectionsCheckingIntervalMs: 2000,
  idleGraceMs: 1000,
  slowHeadGraceMs: 2000,
  overShareAfterMs: 250,
  sheddingReportMs: 10_000,
  drainMaxBytes: 64 * 1024,
  drainTimeoutMs: 2000,
};

/** docs/contract.md "Availability under abuse". */
export type ServerLimits = Partial<typeof DEFAULTS> & {
  maxConnections: number;
  /** The client a connection counts for (the rate limits' key); undefined: none, as behind a proxy. */
  clientKeyOf?: (address: string) => string | undefined;
  headersTimeoutMs: number;
  requestTimeoutMs: number;
};

type Limits = Required<ServerLimits>;

const RECHECK_MS = 100;
/** How many of a rule's oldest candidates (or clients, for `over_share`) are weighed. */
const WINDOW = 16;

/** Node's own `maxConnections`: room for connections that arrive while every held one has a request in flight. */
export function hardCeiling(maxConnections: number): number {
  return maxConnections + Math.max(16, Math.ceil(maxConnections / 8));
}

export function limitsOf(
  config: Pick<
    Config,
    'maxConnections' | 'headersTimeoutMs' | 'requestTimeoutMs' | 'trustProxyHops' | 'trustedProxies' | 'rateLimitIpv6Prefix'
  >,
): ServerLimits {
  const { trustedProxies } = config;
  return {
    maxConnections: config.maxConnections,
    // Behind proxies every peer is a proxy, which counts for no client (it caps its own).
    ...(config.trustProxyHops === 0 && {
      clientKeyOf: (address: string) =>
        trustedProxies?.includes(address) ? undefined : rateLimitKeyOf(address, config.rateLimitIpv6Prefix),
    }),
    headersTimeoutMs: config.headersTimeoutMs,
    requestTimeoutMs: config.requestTimeoutMs,
  };
}

export interface ServeOptions {
  fetch: (request: Request, env: object) => Response | Promise<Response>;
  /** The answer to a request the adapter could not read. */
  refuse: (request: Request) => Response | Promise<Response>;
  hostname: string;
  port: number;
  onShed?: (reason: ConnectionShedReason) => void;
}

/** @hono/node-server's listener on a `node:http` server: limits, shedding above the cap, clean early answers (docs/node-http.md). */
export function serveWithLimits(options: ServeOptions, given: ServerLimits, onListening?: (info: AddressInfo) => void) {
  const limits: Limits = { clientKeyOf: () => undefined, ...DEFAULTS, ...given };
  // Sockets closing after an answer: a request pipelined behind it is not run.
  const closing = new WeakSet<Socket>();
  // The request being handed to the adapter, for its errorHandler (two variables, not an object a request).
  let readingIncoming: IncomingMessage | undefined;
  let readingOutgoing: ServerResponse | undefined;
  const finish = (response: Response, bindings: HttpBindings) => finishEarlyAnswer(response, bindings, closing, limits);

  const adapterListener = getRequestListener(
    (request, env) => {
      const bindings = env as HttpBindings;
      const answer = options.fetch(request, bindings);
      // A GET or HEAD has no body to speak of: Node discards one after the answer.
      if (bindings.incoming.method === 'GET' || bindings.incoming.method === 'HEAD') return answer;
      return answer instanceof Promise ? answer.then((response) => finish(response, bindings)) : finish(answer, bindings);
    },
    {
      hostname: options.hostname,
      // Its drain would close a kept-alive connection 500 ms after an early answer: `finish` does that job.
      autoCleanupIncoming: false,
      // A request Node parsed but the adapter cannot make a Request of (a Host or path it refuses): the app
      // answers a stand-in. Called before the adapter's first await, so the noted request is this one.
      errorHandler: async (error) => {
        if (!(error instanceof RequestError)) return new Response(null, { status: 500 });
        const incoming = readingIncoming;
        const outgoing = readingOutgoing;
        const response = await options.refuse(standInFor(incoming));
        return incoming && outgoing ? finish(response, { incoming, outgoing }) : response;
      },
    },
  );

  const server = createServer({
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    connectionsCheckingInterval: limits.connectionsCheckingIntervalMs,
  });
  server.maxConnections = hardCeiling(limits.maxConnections);
  const shedding = shedConnections(server, limits, options.onShed);
  server.on('request', (incoming: IncomingMessage, outgoing: ServerResponse) => {
    shedding.requestStarted(incoming, outgoing);
    if (closing.has(incoming.socket)) return void incoming.resume();
    // Above the cap a connection is not kept for another request: its answer makes room.
    if (shedding.overCap()) outgoing.setHeader('Connection', 'close');
    readingIncoming = incoming;
    readingOutgoing = outgoing;
    try {
      return adapterListener(incoming, outgoing);
    } finally {
      readingIncoming = undefined;
      readingOutgoing = undefined;
    }
  });
  server.listen(options.port, options.hostname, () => onListening?.(server.address() as AddressInfo));
  return { server, shedding: shedding.isShedding };
}

// An answer ready before the request body was read (413, 415, 403, 429, …) reaches the client whole and says truly
// whether the connection serves another request (docs/node-http.md "Clean early answers").
async function finishEarlyAnswer(response: Response, { incoming, outgoing }: HttpBindings, closing: WeakSet<Socket>, limits: Limits) {
  if (incoming.complete) return response;
  const saysClose = String(outgoing.getHeader('connection') ?? '').toLowerCase() === 'close';
  // Chunked or unreadable: it could be any length.
  const declared = incoming.headers['transfer-encoding'] === undefined ? Number(incoming.headers['content-length'] ?? 0) : Number.NaN;
  const socket = incoming.socket;
  if (!saysClose && Number.isSafeInteger(declared) && declared <= limits.drainMaxBytes) {
    const timer = setTimeout(() => socket.destroy(), limits.drainTimeoutMs).unref();
    const stop = () => clearTimeout(timer);
    incoming.once('end', stop);
    incoming.once('close', stop);
    // A body a handler began to read and let go of is paused; resumed, its bytes are discarded.
    incoming.resume();
    return response;
  }
  // Closing a socket with unread input makes the kernel send a reset that can destroy the answer in the
  // client's buffer: write the answer, half-close, read until the client closes, destroy after the drain time.
  const body = new Uint8Array(await response.arrayBuffer());
  if (socket.destroyed) return RESPONSE_ALREADY_SENT;
  const headers: string[] = [];
  response.headers.forEach((value, name) => {
    if (name !== 'content-length' && name !== 'connection' && name !== 'transfer-encoding') headers.push(name, value);
  });
  headers.push('Content-Length', String(body.byteLength), 'Connection', 'close');
  closing.add(socket);
  const timer = setTimeout(() => socket.destroy(), limits.drainTimeoutMs).unref();
  socket.once('close', () => clearTimeout(timer));
  outgoing.writeHead(response.status, headers);
  outgoing.write(body);
  // Not `outgoing.end()`: Node would destroy the socket once the answer is written.
  socket.end();
  incoming.resume();
  return RESPONSE_ALREADY_SENT;
}

/** Request-target characters kept as sent in the stand-in's path; any other is percent-encoded. */
const UNSAFE_IN_PATH = /[^A-Za-z0-9\-._~!$&'()*+,;=:@/%]/g;

/** The request's method, a path safe to parse and the headers the answer depends on. */
function standInFor(incoming: IncomingMessage | undefined): Request {
  const target = incoming?.url ?? '/';
  const path = target.startsWith('/') ? target.split('?')[0]!.replace(UNSAFE_IN_PATH, encodeURIComponent) : '/';
  const headers = new Headers();
  for (const name of ['origin', 'x-request-id']) {
    const value = incoming?.headers[name];
    try {
      if (typeof value === 'string') headers.set(name, value);
    } catch {
      // A value Headers refuses is left out: the answer is the same without it.
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

export const urlOf = (info: AddressInfo) => `http://${info.family === 'IPv6' ? `[${info.address}]` : info.address}:${info.port}`;

/** A port in use or a host that cannot be bound, for one clear line (not an unhandled 'error' event). */
export const whyNotListening = (error: NodeJS.ErrnoException) =>
  error.code === 'EADDRINUSE' ? 'the port is already in use' : (error.code ?? error.message);

/** Whether REQUEST_TIMEOUT_SECONDS cut this request off: the body read reports "aborted" as for a client that hung up. */
export function timedOutByListener(c: Context): boolean {
  const socket = (c.env as Partial<HttpBindings> | undefined)?.incoming?.socket;
  return (socket?.errored as NodeJS.ErrnoException | null | undefined)?.code === 'ERR_HTTP_REQUEST_TIMEOUT';
}

interface Client {
  key: string;
  held: number;
  /** Its connections that have sent no request yet, oldest first. */
  fresh: Set<Held>;
}

interface Held {
  socket: Socket;
  client: Client | undefined;
  /** Requests read and not yet done (several when the client pipelines). */
  inFlight: number;
  /** When it was accepted, or when its last request was done. */
  since: number;
  gone: boolean;
}

/** Which connections make room above MAX_CONNECTIONS, by the rules in docs/node-http.md "A crowd at one address". */
function shedConnections(server: Server, limits: Limits, onShed?: (reason: ConnectionShedReason) => void) {
  const { maxConnections, clientKeyOf, idleGraceMs, slowHeadGraceMs, overShareAfterMs } = limits;
  const open = new Map<Socket, Held>();
  const clients = new Map<string, Client>();
  // Oldest first: connections that have sent no request yet, and kept-alive ones between requests.
  const fresh = new Set<Held>();
  const idle = new Set<Held>();
  // Clients by their count of fresh connections, to find the one holding most at once.
  const byFresh: Set<Client>[] = [];
  let mostFresh = 0;
  let lastShedAt = Number.NEGATIVE_INFINITY;
  let recheck: NodeJS.Timeout | undefined;
  const overCap = () => open.size > maxConnections;
  const heldBy = (held: Held) => held.client?.held ?? 0;

  function refile(client: Client, from: number) {
    const to = client.fresh.size;
    byFresh[from]?.delete(client);
    if (to > 0) (byFresh[to] ??= new Set()).add(client);
    mostFresh = Math.max(mostFresh, to);
    while (mostFresh > 0 && !byFresh[mostFresh]?.size) mostFresh -= 1;
  }

  function stopWaiting(held: Held) {
    const { client } = held;
    if (idle.delete(held) || !fresh.delete(held)) return;
    if (client?.fresh.delete(held)) refile(client, client.fresh.size + 1);
  }

  function release(held: Held) {
    if (!open.delete(held.socket)) return;
    held.gone = true;
    stopWaiting(held);
    const { client } = held;
    if (client !== undefined && --client.held === 0) clients.delete(client.key);
  }

  /** Of the oldest `WINDOW` in `set` past `graceMs`, the one whose client holds the most connections. */
  function pick(set: Set<Held>, graceMs: number, at: number): Held | undefined {
    let best: Held | undefined;
    let weighed = 0;
    // Oldest first: once one is within the grace, every later one is too.
    for (const held of set) {
      if (at - held.since < graceMs || weighed === WINDOW) break;
      weighed += 1;
      if (best === undefined || heldBy(held) > heldBy(best)) best = held;
    }
    return best;
  }

  // Of the clients holding the most fresh connections (the first `WINDOW`), the oldest fresh one once `overShareAfterMs`
  // old; failing that, the oldest of the client holding the most when that is more than its share of the cap.
  function overShare(at: number): Held | undefined {
    let weighed = 0;
    for (let count = mostFresh; count > 0 && weighed < WINDOW; count -= 1) {
      for (const client of byFresh[count] ?? []) {
        const oldest = client.fresh.values().next().value;
        if (oldest !== undefined && at - oldest.since >= overShareAfterMs) return oldest;
        weighed += 1;
        if (weighed === WINDOW) break;
      }
    }
    if (mostFresh <= Math.ceil(maxConnections / clients.size)) return undefined;
    return byFresh[mostFresh]!.values().next().value!.fresh.values().next().value;
  }

  /** Closes one connection by the rules; false when none may go. */
  function makeRoom(): boolean {
    const at = performance.now();
    const rules: [ConnectionShedReason, () => Held | undefined][] = [
      ['slow_head', () => pick(fresh, slowHeadGraceMs, at)],
      ['over_share', () => overShare(at)],
      ['idle', () => pick(idle, idleGraceMs, at)],
    ];
    for (const [reason, find] of rules) {
      const held = find();
      if (held === undefined) continue;
      release(held);
      lastShedAt = performance.now();
      held.socket.destroy();
      onShed?.(reason);
      return true;
    }
    return false;
  }

  function shedDownToCap() {
    clearTimeout(recheck);
    while (overCap() && makeRoom());
    // Connections age into the rules: look again while the listener stays above its cap.
    recheck = overCap() ? setTimeout(shedDownToCap, Math.min(RECHECK_MS, overShareAfterMs)).unref() : undefined;
  }

  server.on('connection', (socket: Socket) => {
    const key = socket.remoteAddress === undefined ? undefined : clientKeyOf(socket.remoteAddress);
    let client = key === undefined ? undefined : clients.get(key);
    if (key !== undefined && client === undefined) clients.set(key, (client = { key, held: 0, fresh: new Set() }));
    const held: Held = { socket, client, inFlight: 0, since: performance.now(), gone: false };
    open.set(socket, held);
    fresh.add(held);
    if (client) {
      client.held += 1;
      client.fresh.add(held);
      refile(client, client.fresh.size - 1);
    }
    // One listener per connection, however many requests it carries.
    socket.once('close', () => release(held));
    if (overCap()) shedDownToCap();
  });

  const done = (held: Held) => {
    held.inFlight -= 1;
    if (held.inFlight > 0 || held.gone) return;
    held.since = performance.now();
    idle.add(held);
  };
  function responseClosed(this: ServerResponse) {
    const request = this.req;
    const held = open.get(request.socket);
    // Released already (closed or shed): nothing is counted for it any more.
    if (held === undefined) return;
    if (request.complete || request.closed) done(held);
    else request.on('close', () => done(held));
  }

  return {
    /** A request read on its connection: in flight until its answer and its body are done. Called first. */
    requestStarted(request: IncomingMessage, response: ServerResponse) {
      const held = open.get(request.socket);
      if (held === undefined) return;
      if (held.inFlight === 0) stopWaiting(held);
      held.inFlight += 1;
      // On this request's own objects, never on the socket: the request is usually whole, or closed, by then.
      // One handler for every response: no closure made per request.
      response.on('close', responseClosed);
    },
    overCap,
    isShedding: () => overCap() || performance.now() - lastShedAt < limits.sheddingReportMs,
  };
}
