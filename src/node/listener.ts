import { getRequestListener, RequestError, type HttpBindings } from '@hono/node-server';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import type { Context } from 'hono';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Config } from '../core/config/config.js';
import { rateLimitKeyOf } from '../core/http/ip-address.js';
import type { ConnectionShedReason } from '../core/metrics.js';

const DEFAULTS = {
  connectionsCheckingIntervalMs: 2000,
  idleGraceMs: 1000,
  slowHeadGraceMs: 2000,
  overShareAfterMs: 250,
  sheddingReportMs: 10_000,
  drainMaxBytes: 64 * 1024,
  drainTimeoutMs: 2000,
};

export type ServerLimits = Partial<typeof DEFAULTS> & {
  maxConnections: number;
  /** The rate limits' key of a peer; undefined (behind a proxy): it counts for no client. */
  clientKeyOf?: (address: string) => string | undefined;
  headersTimeoutMs: number;
  requestTimeoutMs: number;
};

const RECHECK_MS = 100;
const WINDOW = 16; // how many of a rule's oldest candidates (or clients, for `over_share`) are weighed

export function limitsOf(
  config: Pick<
    Config,
    'maxConnections' | 'headersTimeoutMs' | 'requestTimeoutMs' | 'trustProxyHops' | 'trustedProxies' | 'rateLimitIpv6Prefix'
  >,
): ServerLimits {
  return {
    maxConnections: config.maxConnections,
    // Behind proxies every peer is a proxy, which caps its own clients.
    ...(config.trustProxyHops === 0 && {
      clientKeyOf: (address: string) =>
        config.trustedProxies?.includes(address) ? undefined : rateLimitKeyOf(address, config.rateLimitIpv6Prefix),
    }),
    headersTimeoutMs: config.headersTimeoutMs,
    requestTimeoutMs: config.requestTimeoutMs,
  };
}

export interface ServeOptions {
  fetch: (request: Request, env: object) => Response | Promise<Response>;
  refuse: (request: Request) => Response | Promise<Response>;
  hostname: string;
  port: number;
  onShed?: (reason: ConnectionShedReason) => void;
}

/** @hono/node-server's listener with limits, shedding and clean early answers (docs/node-http.md). */
export function serveWithLimits(options: ServeOptions, given: ServerLimits, onListening?: (info: AddressInfo) => void) {
  const limits: Required<ServerLimits> = { clientKeyOf: () => undefined, ...DEFAULTS, ...given };
  // Closing after an answer: a request pipelined behind it is not run.
  const closing = new WeakSet<Socket>();
  // The answer to the request the adapter is reading (its `req`), for its errorHandler.
  let reading: ServerResponse | undefined;

  // An answer ready before the body was read reaches the client whole (docs/node-http.md "Clean early answers").
  async function finish(response: Response, { incoming, outgoing }: HttpBindings) {
    if (incoming.complete) return response;
    const declared = incoming.headers['transfer-encoding'] === undefined ? Number(incoming.headers['content-length'] ?? 0) : Number.NaN;
    const socket = incoming.socket;
    if (outgoing.getHeader('connection') !== 'close' && Number.isSafeInteger(declared) && declared <= limits.drainMaxBytes) {
      const timer = setTimeout(() => socket.destroy(), limits.drainTimeoutMs).unref();
      const stop = () => clearTimeout(timer);
      incoming.once('end', stop).once('close', stop);
      incoming.resume();
      return response;
    }
    // Closing with unread input sends a reset that can destroy the answer in the client's buffer: half-close and drain.
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
    // Not `outgoing.end()`: Node would destroy the socket.
    socket.end();
    incoming.resume();
    return RESPONSE_ALREADY_SENT;
  }

  const adapterListener = getRequestListener(
    (request, env) => {
      const bindings = env as HttpBindings;
      const answer = options.fetch(request, bindings);
      // Node discards a GET's or HEAD's body after the answer.
      if (bindings.incoming.method === 'GET' || bindings.incoming.method === 'HEAD') return answer;
      return answer instanceof Promise ? answer.then((response) => finish(response, bindings)) : finish(answer, bindings);
    },
    {
      hostname: options.hostname,
      // Its drain would close a kept-alive connection after an early answer: `finish` does that job.
      autoCleanupIncoming: false,
      // A Host or path the adapter refuses: the app answers a stand-in. Called before the adapter's first await.
      errorHandler: async (error) => {
        if (!(error instanceof RequestError)) return new Response(null, { status: 500 });
        const outgoing = reading;
        const response = await options.refuse(standInFor(outgoing?.req));
        return outgoing ? finish(response, { incoming: outgoing.req, outgoing }) : response;
      },
    },
  );

  const server = createServer({
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    connectionsCheckingInterval: limits.connectionsCheckingIntervalMs,
  });
  // Node's own cap: room for arrivals while every held connection has a request in flight.
  server.maxConnections = limits.maxConnections + Math.max(16, Math.ceil(limits.maxConnections / 8));
  const shedding = shedConnections(server, limits, options.onShed);
  server.on('request', (incoming: IncomingMessage, outgoing: ServerResponse) => {
    const held = shedding.requestStarted(incoming);
    if (closing.has(incoming.socket)) return void incoming.resume();
    if (shedding.overCap()) outgoing.setHeader('Connection', 'close');
    reading = outgoing;
    try {
      return adapterListener(incoming, outgoing);
    } finally {
      reading = undefined;
      shedding.answered(outgoing, held);
    }
  });
  server.listen(options.port, options.hostname, () => onListening?.(server.address() as AddressInfo));

  return { server, shedding: shedding.isShedding };
}

const UNSAFE_IN_PATH = /[^A-Za-z0-9\-._~!$&'()*+,;=:@/%]/g;

function standInFor(incoming: IncomingMessage | undefined): Request {
  const target = incoming?.url ?? '/';
  const path = target.startsWith('/') ? target.split('?')[0]!.replace(UNSAFE_IN_PATH, encodeURIComponent) : '/';
  const headers = new Headers();
  for (const name of ['origin', 'x-request-id']) {
    const value = incoming?.headers[name];
    // Node's parser refuses every value Headers would (NUL, CR, LF, beyond Latin-1).
    if (typeof value === 'string') headers.set(name, value);
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

/** Whether REQUEST_TIMEOUT_SECONDS cut this request off (the body read says "aborted" either way). */
export function timedOutByListener(c: Context): boolean {
  const socket = (c.env as Partial<HttpBindings> | undefined)?.incoming?.socket;
  return (socket?.errored as NodeJS.ErrnoException | null | undefined)?.code === 'ERR_HTTP_REQUEST_TIMEOUT';
}

type Client = { key: string; held: number; fresh: Set<Held> };
// `since`: accepted, or its last request done. `older`, `newer`: its neighbours while idle.
type Held = { socket: Socket; client: Client | undefined; inFlight: number; since: number; gone: boolean; older?: Held; newer?: Held };

/** Which connections make room above MAX_CONNECTIONS: docs/node-http.md "A crowd at one address". */
function shedConnections(server: Server, limits: Required<ServerLimits>, onShed?: (reason: ConnectionShedReason) => void) {
  const { maxConnections, clientKeyOf, idleGraceMs, slowHeadGraceMs, overShareAfterMs } = limits;
  const open = new Map<Socket, Held>();
  const clients = new Map<string, Client>();
  const fresh = new Set<Held>();
  // Idle connections, oldest first: a ring through their records, `idle` its ends (a Set rejoined per request rehashes every few).
  const idle = {} as Held;
  idle.older = idle.newer = idle;
  const idleOldestFirst = function* () {
    for (let held = idle.newer!; held !== idle; held = held.newer!) yield held;
  };
  const byFresh: Set<Client>[] = [];
  let mostFresh = 0;
  let lastShedAt = Number.NEGATIVE_INFINITY;
  let recheck: NodeJS.Timeout | undefined;
  const overCap = () => open.size > maxConnections;

  function refile(client: Client, from: number) {
    const to = client.fresh.size;
    byFresh[from]?.delete(client);
    if (to > 0) (byFresh[to] ??= new Set()).add(client);
    mostFresh = Math.max(mostFresh, to);
    while (mostFresh > 0 && !byFresh[mostFresh]?.size) mostFresh -= 1;
  }

  function stopWaiting(held: Held) {
    if (held.newer !== undefined) {
      held.older!.newer = held.newer;
      held.newer.older = held.older;
      held.older = held.newer = undefined;
      return;
    }
    if (!fresh.delete(held)) return;
    if (held.client?.fresh.delete(held)) refile(held.client, held.client.fresh.size + 1);
  }

  function release(held: Held) {
    if (!open.delete(held.socket)) return;
    held.gone = true;
    stopWaiting(held);
    if (held.client !== undefined && --held.client.held === 0) clients.delete(held.client.key);
  }

  function pick(set: Iterable<Held>, graceMs: number, at: number): Held | undefined {
    let best: Held | undefined;
    let weighed = 0;
    for (const held of set) {
      if (at - held.since < graceMs || weighed === WINDOW) break;
      weighed += 1;
      if (best === undefined || (held.client?.held ?? 0) > (best.client?.held ?? 0)) best = held;
    }
    return best;
  }

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

  function makeRoom(): boolean {
    const at = performance.now();
    let reason: ConnectionShedReason = 'slow_head';
    let held = pick(fresh, slowHeadGraceMs, at);
    if (held === undefined) [reason, held] = ['over_share', overShare(at)];
    if (held === undefined) [reason, held] = ['idle', pick(idleOldestFirst(), idleGraceMs, at)];
    if (held === undefined) return false;
    release(held);
    lastShedAt = performance.now();
    held.socket.destroy();
    onShed?.(reason);
    return true;
  }

  function shedDownToCap() {
    clearTimeout(recheck);
    while (overCap() && makeRoom());
    recheck = overCap() ? setTimeout(shedDownToCap, Math.min(RECHECK_MS, overShareAfterMs)).unref() : undefined;
  }

  server.on('connection', (socket: Socket) => {
    const key = socket.remoteAddress === undefined ? undefined : clientKeyOf(socket.remoteAddress);
    let client = key === undefined ? undefined : clients.get(key);
    if (key !== undefined && client === undefined) clients.set(key, (client = { key, held: 0, fresh: new Set() }));
    const held: Held = { socket, client, inFlight: 0, since: performance.now(), gone: false, older: undefined, newer: undefined };
    open.set(socket, held);
    fresh.add(held);
    if (client) {
      client.held += 1;
      client.fresh.add(held);
      refile(client, client.fresh.size - 1);
    }
    socket.once('close', () => release(held));
    if (overCap()) shedDownToCap();
  });

  const done = (held: Held) => {
    if (--held.inFlight > 0 || held.gone) return;
    held.since = performance.now();
    held.older = idle.older;
    held.newer = idle;
    idle.older = idle.older!.newer = held;
  };
  function responseClosed(this: ServerResponse) {
    const request = this.req;
    const held = open.get(request.socket);
    if (held === undefined) return;
    if (request.complete || request.closed) done(held);
    else request.on('close', () => done(held));
  }

  return {
    requestStarted(request: IncomingMessage): Held | undefined {
      const held = open.get(request.socket);
      if (held === undefined) return;
      if (held.inFlight === 0) stopWaiting(held);
      held.inFlight += 1;
      return held;
    },
    // After the listener's synchronous part: a bodiless request whose answer is all in the kernel's hands is done; the rest, at `close`.
    answered(response: ServerResponse, held: Held | undefined) {
      const { headers, socket } = response.req;
      const whole = headers['content-length'] === undefined && headers['transfer-encoding'] === undefined;
      if (!response.writableEnded || socket.writableLength > 0 || !whole) return void response.on('close', responseClosed);
      if (held !== undefined) done(held);
    },
    overCap,
    isShedding: () => overCap() || performance.now() - lastShedAt < limits.sheddingReportMs,
  };
}
