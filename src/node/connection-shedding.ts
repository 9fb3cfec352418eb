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
  maxConnections: number;
  /** The rate limits' key of a peer address; undefined: no client (a trusted proxy), never over share. */
  clientKeyOf?: (address: string) => string | undefined;
  idleGraceMs: number;
  slowHeadGraceMs: number;
  overShareAfterMs: number;
  /** How often, above the cap with nothing to close, it looks again. */
  recheckMs: number;
  /** How long after its last shed readiness still reports shedding. */
  reportMs: number;
  /** Monotonic milliseconds. */
  now?: () => number;
  onShed?: (reason: ConnectionShedReason) => void;
}

/** How many of a rule's oldest candidates (or clients) are weighed. */
const WINDOW = 16;

interface Client {
  key: string;
  held: number;
  /** Its connections that have sent no request yet, oldest first. */
  fresh: Set<Held>;
}

interface Held {
  socket: Socket;
  client: Client | undefined;
  /** More than one when the client pipelines. */
  inFlight: number;
  /** When it was accepted, or when its last request was done. */
  since: number;
  /** Between requests it is idle; before its first, fresh. */
  served: boolean;
  gone: boolean;
}

export function shedConnections(server: Server, options: SheddingOptions) {
  const { maxConnections, clientKeyOf, idleGraceMs, slowHeadGraceMs, overShareAfterMs, recheckMs, reportMs, onShed } = options;
  const now = options.now ?? (() => performance.now());
  const bySocket = new WeakMap<Socket, Held>();
  const clients = new Map<string, Client>();
  const fresh = new Set<Held>();
  /** Longest idle first. */
  const idle = new Set<Held>();
  /** Clients by their count of fresh connections. */
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

  /** Of the oldest `WINDOW` past `graceMs`, the one whose client holds the most connections. */
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

  /** Among the clients holding most fresh connections, an old enough one; else the top client's oldest when over its share. */
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
    socket.once('close', () => release(held));
    if (open > maxConnections) shedDownToCap();
  });

  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const held = bySocket.get(request.socket);
    if (held === undefined || held.gone) return;
    if (held.inFlight === 0) stopWaiting(held);
    held.inFlight += 1;
    held.served = true;
    // Done when both the answer and the request are: listeners on their own objects, never on the socket.
    let parts = 2;
    const partDone = () => {
      parts -= 1;
      if (parts > 0) return;
      held.inFlight -= 1;
      if (held.inFlight === 0 && !held.gone) startWaiting(held);
    };
    response.once('close', partDone);
    request.once('close', partDone);
  });

  return {
    open: () => open,
    /** Above MAX_CONNECTIONS: an answer should close its connection. */
    overCap: () => open > maxConnections,
    isShedding: () => open > maxConnections || now() - lastShedAt < reportMs,
  };
}
