import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { ConnectionShedReason } from '../core/metrics.js';

/**
 * Which connections make room above MAX_CONNECTIONS (docs/node-http.md "A crowd at one address"),
 * in this order: `slow_head` (no whole head within the grace), `over_share` (the oldest fresh one
 * of the address holding the most, once old enough or at once when that address holds more than its
 * share of the cap), then `idle` (last: a pool may send its next request on it at any moment). A
 * connection with a request in flight is never closed here; public events and `destroy()` only.
 */
export interface SheddingOptions {
  /** MAX_CONNECTIONS: above it, connections make room. */
  maxConnections: number;
  /**
   * The client a connection counts for, from its peer address (the rate limits' key). Undefined,
   * or undefined for an address: it counts for no client (a trusted proxy), so never over share.
   */
  clientKeyOf?: (address: string) => string | undefined;
  idleGraceMs: number;
  slowHeadGraceMs: number;
  overShareAfterMs: number;
  /** How often, while above the cap with nothing to close, it looks again. */
  recheckMs: number;
  /** How long after its last shed the listener still says it is shedding (readiness). */
  reportMs: number;
  /** Milliseconds, monotonic (default `performance.now`). */
  now?: () => number;
  onShed?: (reason: ConnectionShedReason) => void;
}

export interface Shedding {
  /**
   * A request the listener has read, on the connection it came by: in flight until both its
   * answer and the request (its body read or discarded) are done. The listener calls it first.
   */
  requestStarted(request: IncomingMessage, response: ServerResponse): void;
  /** Connections held (a shed one no longer counts). */
  open(): number;
  /** Whether the listener holds more than MAX_CONNECTIONS: an answer should then close its connection. */
  overCap(): boolean;
  /** Above the cap, or it shed a connection within the last `reportMs`: readiness reports it. */
  isShedding(): boolean;
}

/** How many of a rule's oldest candidates (or clients, for rule 3) are weighed. */
const WINDOW = 16;

interface Client {
  key: string;
  /** Open connections of this client. */
  held: number;
  /** Its connections that have sent no request yet, oldest first. */
  fresh: Set<Held>;
}

interface Held {
  socket: Socket;
  client: Client | undefined;
  /** Requests read and not yet done (more than one when the client pipelines). */
  inFlight: number;
  /** When it was accepted, or when its last request was done. */
  since: number;
  /** Whether it has carried a request: between requests it is idle, before its first fresh. */
  served: boolean;
  gone: boolean;
}

export function shedConnections(server: Server, options: SheddingOptions): Shedding {
  const { maxConnections, clientKeyOf, idleGraceMs, slowHeadGraceMs, overShareAfterMs, recheckMs, reportMs, onShed } = options;
  const now = options.now ?? (() => performance.now());
  const bySocket = new WeakMap<Socket, Held>();
  const clients = new Map<string, Client>();
  /** Connections that have sent no request yet, oldest first. */
  const fresh = new Set<Held>();
  /** Kept-alive connections between requests, longest idle first. */
  const idle = new Set<Held>();
  /** Clients by their count of fresh connections, to find the one holding most at once. */
  const byFresh = new Map<number, Set<Client>>();
  let mostFresh = 0;
  let open = 0;
  let lastShedAt = Number.NEGATIVE_INFINITY;
  let recheck: NodeJS.Timeout | undefined;

  function moveBucket(client: Client, from: number) {
    const to = client.fresh.size;
    if (from > 0) byFresh.get(from)?.delete(client);
    if (to > 0) {
      let bucket = byFresh.get(to);
      if (bucket === undefined) byFresh.set(to, (bucket = new Set()));
      bucket.add(client);
    }
    if (to > mostFresh) mostFresh = to;
    while (mostFresh > 0 && !byFresh.get(mostFresh)?.size) mostFresh -= 1;
  }

  function startWaiting(held: Held) {
    held.since = now();
    if (held.served) return void idle.add(held);
    fresh.add(held);
    const { client } = held;
    if (client === undefined) return;
    client.fresh.add(held);
    moveBucket(client, client.fresh.size - 1);
  }

  function stopWaiting(held: Held) {
    if (idle.delete(held) || !fresh.delete(held)) return;
    const { client } = held;
    if (client?.fresh.delete(held)) moveBucket(client, client.fresh.size + 1);
  }

  function release(held: Held) {
    if (held.gone) return;
    held.gone = true;
    open -= 1;
    stopWaiting(held);
    const { client } = held;
    if (client !== undefined && --client.held === 0) clients.delete(client.key);
  }

  const heldBy = (held: Held) => held.client?.held ?? 0;

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

  /**
   * Of the clients holding the most fresh connections (the first `WINDOW`), the oldest fresh one
   * once it is `overShareAfterMs` old; failing that, the oldest of the client holding the most,
   * young or not, when that is more than its share (the cap divided between the clients).
   */
  function overShare(at: number): Held | undefined {
    let weighed = 0;
    for (let count = mostFresh; count > 0 && weighed < WINDOW; count -= 1) {
      for (const client of byFresh.get(count) ?? []) {
        const oldest = client.fresh.values().next().value;
        if (oldest !== undefined && at - oldest.since >= overShareAfterMs) return oldest;
        weighed += 1;
        if (weighed === WINDOW) break;
      }
    }
    if (mostFresh <= Math.ceil(maxConnections / clients.size)) return undefined;
    const top: Client = byFresh.get(mostFresh)!.values().next().value!;
    return top.fresh.values().next().value;
  }

  function shed(held: Held, reason: ConnectionShedReason) {
    release(held);
    lastShedAt = now();
    held.socket.destroy();
    onShed?.(reason);
  }

  /** Closes one connection by the rules; false when none may go. */
  function makeRoom(): boolean {
    const at = now();
    const slowOne = pick(fresh, slowHeadGraceMs, at);
    if (slowOne) return (shed(slowOne, 'slow_head'), true);
    const overOne = overShare(at);
    if (overOne) return (shed(overOne, 'over_share'), true);
    const idleOne = pick(idle, idleGraceMs, at);
    if (idleOne) return (shed(idleOne, 'idle'), true);
    return false;
  }

  function shedDownToCap() {
    clearTimeout(recheck);
    recheck = undefined;
    while (open > maxConnections && makeRoom());
    // Connections age into the rules: look again while the listener stays above its cap.
    if (open > maxConnections) {
      recheck = setTimeout(shedDownToCap, recheckMs);
      recheck.unref();
    }
  }

  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress;
    const key = address === undefined ? undefined : clientKeyOf?.(address);
    let client: Client | undefined;
    if (key !== undefined) {
      client = clients.get(key);
      if (client === undefined) clients.set(key, (client = { key, held: 0, fresh: new Set() }));
      client.held += 1;
    }
    const held: Held = { socket, client, inFlight: 0, since: 0, served: false, gone: false };
    bySocket.set(socket, held);
    open += 1;
    startWaiting(held);
    // One listener per connection, however many requests it carries.
    socket.once('close', () => release(held));
    if (open > maxConnections) shedDownToCap();
  });

  function requestStarted(request: IncomingMessage, response: ServerResponse) {
    const held = bySocket.get(request.socket);
    if (held === undefined || held.gone) return;
    if (held.inFlight === 0) stopWaiting(held);
    held.inFlight += 1;
    held.served = true;
    // Done when both the answer and the request (its body read or discarded) are: listeners on
    // this request's own objects, gone with them, never on the socket. The request has usually
    // arrived whole (a GET always), or closed, by the time its answer is sent: then one listener
    // does. `on`, not `once`: each fires once, and its object goes with it.
    response.on('close', () => {
      if (request.complete || request.closed) done(held);
      else request.on('close', () => done(held));
    });
  }

  function done(held: Held) {
    held.inFlight -= 1;
    if (held.inFlight === 0 && !held.gone) startWaiting(held);
  }

  return {
    requestStarted,
    open: () => open,
    overCap: () => open > maxConnections,
    isShedding: () => open > maxConnections || now() - lastShedAt < reportMs,
  };
}
