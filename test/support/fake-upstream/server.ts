import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { createFakeUpstream, type FakeUpstreamOptions } from './fake.js';
import { ConnectionBroken } from './faults.js';

/**
 * The fake upstream (fake.ts) on a real socket: node:http on 127.0.0.1 and an ephemeral port,
 * for the fault suite and the bench. A broken connection in the fake becomes a closed (or
 * reset) socket here; every request is recorded with its raw headers.
 */
export interface RecordedUpstreamRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  mode: string;
}

const HOST = '127.0.0.1';
const MAX_REQUEST_BODY_BYTES = 64 * 1024;

/** Resolves once `done()` holds; rejects after `withinMs` with `what` (bounded, no polling). */
function waitUntil(waiters: Set<() => void>, done: () => boolean, withinMs: number, what: () => string): Promise<void> {
  if (done()) return Promise.resolve();
  return new Promise<void>((resolve, reject) => {
    const check = () => {
      if (!done()) return;
      finish();
      resolve();
    };
    const timer = setTimeout(() => {
      finish();
      reject(new Error(`${what()} after ${withinMs} ms`));
    }, withinMs);
    const finish = () => {
      clearTimeout(timer);
      waiters.delete(check);
    };
    waiters.add(check);
  });
}

/** Backpressure: waits until the client reads on, or goes away. */
function drainedOrClosed(res: ServerResponse): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

/** Starts the fake upstream on 127.0.0.1 and an ephemeral port; `baseUrl` is set from the port. */
export async function startFakeUpstreamServer(options: Omit<FakeUpstreamOptions, 'baseUrl'> = {}) {
  const server: Server = createServer({ keepAliveTimeout: 65_000 });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, HOST, resolve);
  });
  const { port } = server.address() as AddressInfo;
  const fake = createFakeUpstream({ ...options, baseUrl: `http://${HOST}:${port}/v1` });
  let mode = 'ok';
  const requests: RecordedUpstreamRequest[] = [];
  const sockets = new Set<Socket>();
  /** Responses begun and not yet closed (sent in full, or their connection gone). */
  const open = new Set<ServerResponse>();
  const aborts = new Set<AbortController>();
  const waiters = new Set<() => void>();
  const notify = () => {
    for (const waiter of [...waiters]) waiter();
  };

  server.on('request', (req, res) => {
    open.add(res);
    notify();
    const abort = new AbortController();
    aborts.add(abort);
    res.on('close', () => {
      open.delete(res);
      aborts.delete(abort);
      abort.abort();
      notify();
    });
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.byteLength;
      if (size <= MAX_REQUEST_BODY_BYTES) chunks.push(chunk);
    });
    req.on('error', () => undefined);
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      requests.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, body, mode });
      const headers = new Headers();
      for (const [name, value] of Object.entries(req.headers)) if (typeof value === 'string') headers.set(name, value);
      const method = req.method ?? 'GET';
      const init = { method, headers, signal: abort.signal, ...(method === 'GET' || method === 'HEAD' ? {} : { body }) };
      void fake.fetch(`http://${HOST}:${port}${req.url ?? '/'}`, init).then(
        (response) => send(response, res),
        (error: unknown) => {
          if (error instanceof ConnectionBroken && error.rst) req.socket.resetAndDestroy();
          else req.socket.destroy();
        },
      );
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => {
      sockets.delete(socket);
      notify();
    });
  });
  server.on('clientError', (_error, socket) => socket.destroy());

  /** Writes `response`; a body that breaks off breaks the connection off. */
  async function send(response: Response, res: ServerResponse): Promise<void> {
    if (res.destroyed) return;
    const headers: Record<string, string> = {};
    response.headers.forEach((value, name) => {
      headers[name] = value;
    });
    const reader = response.body?.getReader();
    try {
      const first = reader ? await reader.read() : { done: true as const, value: undefined };
      if (res.destroyed) return void reader?.cancel();
      if (first.done || first.value === undefined) {
        res.writeHead(response.status, headers).end();
        return;
      }
      const second = await reader!.read();
      if (second.done && headers['content-length'] === undefined) headers['content-length'] = String(first.value.byteLength);
      res.writeHead(response.status, headers);
      // Bounded by the body: every round writes one chunk the fake produced, or stops.
      let chunk: Uint8Array = first.value;
      for (let next = second; ; ) {
        if (res.destroyed) return void reader!.cancel();
        if (!res.write(chunk)) await drainedOrClosed(res);
        if (next.done) return void res.end();
        chunk = next.value;
        next = await reader!.read();
      }
    } catch {
      res.socket?.destroy();
    }
  }

  return {
    fetch: fake.fetch,
    baseUrl: fake.baseUrl,
    demo: fake.demo,
    publish: fake.publish,
    edit: fake.edit,
    unpublish: fake.unpublish,
    bytesServed: fake.bytesServed,
    counts: fake.counts,
    callsFor: fake.callsFor,
    slugCalls: fake.slugCalls,
    setLatency: fake.setLatency,
    get latencyMs() {
      return fake.latencyMs;
    },
    get unknownSlugCalls() {
      return fake.unknownSlugCalls;
    },
    port,
    origin: `http://${HOST}:${port}`,
    /** Every later request is answered this way. */
    setMode(next: Parameters<typeof fake.setMode>[0]): void {
      mode = next.kind;
      fake.setMode(next);
    },
    requests,
    /** Requests received since `index` (take `requests.length` before an action). */
    requestsSince: (index: number): RecordedUpstreamRequest[] => requests.slice(index),
    /** Connections currently open to this server (idle keep-alive ones included). */
    openConnections: () => sockets.size,
    /** Responses begun and not finished: a socket left hanging. */
    pendingResponses: () => open.size,
    /** Resolves once at least `count` responses are pending: a request sent in the background has arrived. */
    pending: (count: number, withinMs = 3_000) =>
      waitUntil(
        waiters,
        () => open.size >= count,
        withinMs,
        () => `${open.size} of ${count} upstream response(s) pending`,
      ),
    /** Resolves once no response is pending: a pending one means the caller walked away without closing it. */
    settled: (withinMs = 3_000) =>
      waitUntil(
        waiters,
        () => open.size === 0,
        withinMs,
        () => `${open.size} upstream response(s) still pending`,
      ),
    /** Resolves once no connection at all is open. */
    drained: (withinMs = 3_000) =>
      waitUntil(
        waiters,
        () => sockets.size === 0,
        withinMs,
        () => `${sockets.size} upstream connection(s) still open`,
      ),
    /** Stops everything: slow answers, every connection, the listener. */
    async stop(): Promise<void> {
      for (const abort of aborts) abort.abort();
      server.closeAllConnections();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export type FakeUpstreamServer = Awaited<ReturnType<typeof startFakeUpstreamServer>>;

/**
 * A listener that only records whether anyone connected: the target of a redirect to another
 * host, which a client must never follow. Binds another loopback address (127.0.0.2).
 */
export async function startTrapListener(host = '127.0.0.2') {
  let connections = 0;
  let requests = 0;
  const server = createServer((_req, res) => {
    requests += 1;
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end('{"ok":true,"data":[]}');
  });
  server.on('connection', () => {
    connections += 1;
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  return {
    host,
    port,
    origin: `http://${host}:${port}`,
    /** TCP connections accepted, whether or not a request followed. */
    contacts: () => connections + requests,
    async stop(): Promise<void> {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
