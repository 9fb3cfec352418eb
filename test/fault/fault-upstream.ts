import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { INTERNAL_VALUES, UPSTREAM_HEADERS } from './leak-scan.js';

/**
 * A fault-injecting stand-in for the newsletter service, on real loopback sockets
 * (toxiproxy-style, issue 7 "Fault and fuzz suite"). In mode `ok` it answers the four operations
 * a public site uses, with every internal field the real service sends (so the leak scan has
 * something to find); every other mode breaks the answer in one specific way.
 */
export type FaultMode =
  | { kind: 'ok' }
  /** A good answer, after `ms`. */
  | { kind: 'latency'; ms: number }
  /** Reads the request and never answers. */
  | { kind: 'hang' }
  /** Closes the connection before any byte of the response (`rst`: a TCP RST instead of a FIN). */
  | { kind: 'reset-before-headers'; rst?: boolean }
  /** Sends the headers and half of a good body, then destroys the socket. */
  | { kind: 'reset-mid-body' }
  /** Sends the headers, then one byte of the body every `intervalMs`. */
  | { kind: 'slow-drip'; intervalMs: number }
  /** A complete HTTP response whose JSON body stops in the middle. */
  | { kind: 'truncated-json' }
  /** A `bytes`-long body, with or without a Content-Length that says so. */
  | { kind: 'huge-body'; bytes: number; declareLength: boolean }
  /** 200 with an HTML page (a captive portal, a misrouted load balancer). */
  | { kind: 'html' }
  /** Every answer a 5xx, cycling through `statuses`. */
  | { kind: 'status-storm'; statuses: readonly number[] }
  /** 429 with this `Retry-After`. */
  | { kind: 'rate-limited'; retryAfter: string }
  /** A redirect to `location` (which a client must never follow with the key). */
  | { kind: 'redirect'; status: number; location: string }
  /** Valid JSON in the success envelope, with the wrong fields. */
  | { kind: 'wrong-shape' };

export interface RecordedUpstreamRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  mode: FaultMode['kind'];
}

export interface FaultUpstreamOptions {
  /** The key the service must send as `Authorization: Bearer <key>`; anything else is a 401. */
  apiKey: string;
  /** Upper bound on any one slow answer (drip, latency), so nothing outlives the suite. */
  maxHoldMs?: number;
}

const HOST = '127.0.0.1';
const MAX_REQUEST_BODY_BYTES = 64 * 1024;
const CHUNK = Buffer.alloc(64 * 1024, 'a');

/** Starts the fault upstream on 127.0.0.1 and an ephemeral port. */
export async function startFaultUpstream(options: FaultUpstreamOptions) {
  const { apiKey, maxHoldMs = 5_000 } = options;
  let mode: FaultMode = { kind: 'ok' };
  let stormIndex = 0;
  const requests: RecordedUpstreamRequest[] = [];
  const sockets = new Set<Socket>();
  /** Responses begun and not yet closed (sent in full, or their connection gone). */
  const open = new Set<ServerResponse>();
  const timers = new Set<NodeJS.Timeout>();
  const waiters = new Set<() => void>();

  const notify = () => {
    for (const waiter of [...waiters]) waiter();
  };

  const later = (ms: number, fn: () => void): NodeJS.Timeout => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      fn();
    }, ms);
    timers.add(timer);
    return timer;
  };

  const server: Server = createServer({ keepAliveTimeout: 5_000 }, (req, res) => {
    open.add(res);
    res.on('close', () => {
      open.delete(res);
      notify();
    });
    const current = mode;
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.byteLength;
      if (size <= MAX_REQUEST_BODY_BYTES) chunks.push(chunk);
    });
    req.on('error', () => undefined);
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      requests.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, body, mode: current.kind });
      if (req.headers.authorization !== `Bearer ${apiKey}`) {
        sendJson(res, 401, errorEnvelope('UNAUTHORIZED'));
        return;
      }
      answer(current, req, res);
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

  function answer(current: FaultMode, req: IncomingMessage, res: ServerResponse): void {
    switch (current.kind) {
      case 'ok': {
        const good = goodAnswer(req);
        sendJson(res, good.status, good.body);
        return;
      }
      case 'latency': {
        const timer = later(Math.min(current.ms, maxHoldMs), () => {
          const good = goodAnswer(req);
          if (!res.destroyed) sendJson(res, good.status, good.body);
        });
        res.on('close', () => clearAndForget(timer));
        return;
      }
      case 'hang':
        // Nothing is sent. The caller's timeout must end this; stop() ends it otherwise.
        return;
      case 'reset-before-headers':
        if (current.rst) req.socket.resetAndDestroy();
        else req.socket.destroy();
        return;
      case 'reset-mid-body': {
        const text = JSON.stringify(goodAnswer(req).body);
        res.writeHead(200, jsonHeaders(Buffer.byteLength(text)));
        res.write(text.slice(0, Math.floor(text.length / 2)), () => res.socket?.destroy());
        return;
      }
      case 'slow-drip': {
        const bytes = Buffer.from(JSON.stringify(goodAnswer(req).body));
        res.writeHead(200, jsonHeaders(bytes.byteLength));
        res.flushHeaders();
        let sent = 0;
        const started = Date.now();
        const drip = () => {
          if (res.destroyed) return;
          if (Date.now() - started > maxHoldMs) {
            res.socket?.destroy();
            return;
          }
          res.write(bytes.subarray(sent, sent + 1));
          sent += 1;
          if (sent >= bytes.byteLength) res.end();
          else timer = later(current.intervalMs, drip);
        };
        let timer = later(current.intervalMs, drip);
        res.on('close', () => clearAndForget(timer));
        return;
      }
      case 'truncated-json': {
        const text = JSON.stringify(goodAnswer(req).body);
        const truncated = text.slice(0, Math.max(1, Math.floor(text.length * 0.6)));
        res.writeHead(200, jsonHeaders(Buffer.byteLength(truncated)));
        res.end(truncated);
        return;
      }
      case 'huge-body':
        void streamHugeBody(res, current.bytes, current.declareLength);
        return;
      case 'html': {
        const html = `<!doctype html><html><head><title>Gateway</title></head><body><h1>Please sign in</h1><p>${INTERNAL_VALUES.errorText}</p></body></html>`;
        res.writeHead(200, { ...UPSTREAM_HEADERS, 'Content-Type': 'text/html; charset=utf-8', 'Content-Length': Buffer.byteLength(html) });
        res.end(html);
        return;
      }
      case 'status-storm': {
        const status = current.statuses[stormIndex % current.statuses.length] ?? 503;
        stormIndex += 1;
        sendJson(res, status, errorEnvelope('INTERNAL'));
        return;
      }
      case 'rate-limited':
        sendJson(res, 429, errorEnvelope('RATE_LIMITED'), { 'Retry-After': current.retryAfter });
        return;
      case 'redirect':
        sendJson(res, current.status, errorEnvelope('MOVED'), { Location: current.location });
        return;
      case 'wrong-shape':
        sendJson(res, 200, {
          ok: true,
          data: {
            id: 42,
            title: 'A record of some other kind',
            status: 7,
            workspaceId: INTERNAL_VALUES.workspaceId,
            accountSetId: INTERNAL_VALUES.accountSetId,
            createdBy: INTERNAL_VALUES.createdBy,
            stats: issueStats(),
          },
        });
        return;
    }
  }

  async function streamHugeBody(res: ServerResponse, total: number, declareLength: boolean): Promise<void> {
    const head = Buffer.from('{"ok":true,"data":"');
    const tail = Buffer.from('"}');
    const headers: Record<string, string | number> = { ...UPSTREAM_HEADERS, 'Content-Type': 'application/json' };
    if (declareLength) headers['Content-Length'] = total;
    res.writeHead(200, headers);
    let written = 0;
    const write = async (buffer: Buffer): Promise<boolean> => {
      if (res.destroyed || res.writableEnded) return false;
      written += buffer.byteLength;
      if (res.write(buffer)) return true;
      // Backpressure: wait until the client reads on, or goes away.
      await new Promise<void>((resolve) => {
        const done = () => {
          res.off('drain', done);
          res.off('close', done);
          resolve();
        };
        res.on('drain', done);
        res.on('close', done);
      });
      return !res.destroyed;
    };
    if (!(await write(head))) return;
    while (written + tail.byteLength < total) {
      const room = total - tail.byteLength - written;
      if (!(await write(room >= CHUNK.byteLength ? CHUNK : CHUNK.subarray(0, room)))) return;
    }
    if (await write(tail)) res.end();
  }

  function clearAndForget(timer: NodeJS.Timeout): void {
    clearTimeout(timer);
    timers.delete(timer);
  }

  await new Promise<void>((resolve) => server.listen(0, HOST, resolve));
  const { port } = server.address() as AddressInfo;

  return {
    port,
    origin: `http://${HOST}:${port}`,
    baseUrl: `http://${HOST}:${port}/v1`,
    /** Every later request is answered this way. */
    setMode(next: FaultMode): void {
      mode = next;
      stormIndex = 0;
    },
    requests,
    /** Requests received since `index` (take `requests.length` before an action). */
    requestsSince(index: number): RecordedUpstreamRequest[] {
      return requests.slice(index);
    },
    /** Connections currently open to this server (idle keep-alive ones included). */
    openConnections: () => sockets.size,
    /** Responses begun and not finished: a socket left hanging. */
    pendingResponses: () => open.size,
    /**
     * Resolves once no response is pending; rejects after `withinMs` (bounded, no polling).
     * A pending response means the service walked away from a request without closing it.
     */
    settled(withinMs = 3_000): Promise<void> {
      if (open.size === 0) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const check = () => {
          if (open.size > 0) return;
          finish();
          resolve();
        };
        const timer = setTimeout(() => {
          finish();
          reject(new Error(`${open.size} upstream response(s) still pending after ${withinMs} ms`));
        }, withinMs);
        const finish = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
      });
    },
    /** Resolves once no connection at all is open; rejects after `withinMs`. */
    drained(withinMs = 3_000): Promise<void> {
      if (sockets.size === 0) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const check = () => {
          if (sockets.size > 0) return;
          finish();
          resolve();
        };
        const timer = setTimeout(() => {
          finish();
          reject(new Error(`${sockets.size} upstream connection(s) still open after ${withinMs} ms`));
        }, withinMs);
        const finish = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
      });
    },
    /** Stops everything: timers, every connection, the listener. */
    async stop(): Promise<void> {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      server.closeAllConnections();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export type FaultUpstream = Awaited<ReturnType<typeof startFaultUpstream>>;

/**
 * A listener that only records whether anyone connected: the target of a redirect to another
 * host, which the service must never follow. Binds another loopback address (127.0.0.2).
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

function jsonHeaders(length: number): Record<string, string | number> {
  return { ...UPSTREAM_HEADERS, 'Content-Type': 'application/json', 'Content-Length': length };
}

function sendJson(res: ServerResponse, status: number, body: unknown, extra: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { ...jsonHeaders(Buffer.byteLength(text)), ...extra });
  res.end(text);
}

function errorEnvelope(code: string) {
  return { ok: false, error: { code, message: INTERNAL_VALUES.errorText, details: { workspaceId: INTERNAL_VALUES.workspaceId } } };
}

function issueStats() {
  return {
    newSubscriberCount: 3,
    subscriberCountTargeted: 120,
    sentCount: 120,
    deliveredCount: 118,
    openedCount: 64,
    clickedCount: 12,
    bouncedCount: 2,
    complainedCount: 0,
    failedCount: 0,
  };
}

function upstreamCategory(slug: string, name: string) {
  return {
    id: `${INTERNAL_VALUES.categoryIdPrefix}${slug}`,
    workspaceId: INTERNAL_VALUES.workspaceId,
    accountSetId: INTERNAL_VALUES.accountSetId,
    name,
    slug,
    createdAt: '2025-01-01T00:00:00.000Z',
    updatedAt: '2025-01-01T00:00:00.000Z',
  };
}

/** An upstream Issue with every field upstream-api.md lists, internal ones included. */
function upstreamIssue(slug: string, index = 0) {
  const category = upstreamCategory('essays', 'Essays');
  return {
    id: `${INTERNAL_VALUES.issueIdPrefix}${slug}`,
    slug,
    workspaceId: INTERNAL_VALUES.workspaceId,
    accountSetId: INTERNAL_VALUES.accountSetId,
    subject: `Issue ${slug}`,
    previewText: `Preview of ${slug}`,
    thumbnailUrl: `https://images.example/${slug}.png`,
    contentHtml: `<p>The issue called ${slug}.</p>`,
    contentJson: INTERNAL_VALUES.contentJson,
    scheduledFor: null,
    audience: { segment: 'all' },
    status: 'sent',
    isPublic: true,
    category,
    categories: [category],
    stats: issueStats(),
    createdBy: INTERNAL_VALUES.createdBy,
    sentAt: new Date(Date.UTC(2025, 0, 28 - index)).toISOString(),
    createdAt: '2025-01-01T00:00:00.000Z',
    updatedAt: '2025-01-01T00:00:00.000Z',
  };
}

function goodAnswer(req: IncomingMessage): { status: number; body: unknown } {
  return healthyUpstreamAnswer(req.method ?? 'GET', req.url ?? '/');
}

/**
 * A healthy upstream's answer to `method` on `target` (path and query), by operation
 * (upstream-api.md "Endpoints"); slugs starting with `missing-` are unknown. Shared with the fuzz suite.
 */
export function healthyUpstreamAnswer(method: string, target: string): { status: number; body: unknown } {
  const url = new URL(target, 'http://upstream.invalid');
  const path = url.pathname;
  if (method === 'GET' && path === '/v1/newsletter/issues') {
    const offset = Number(url.searchParams.get('offset') ?? '0');
    const issues = offset > 0 ? [] : ['first-light', 'second-wind', 'third-rail'].map((slug, index) => upstreamIssue(slug, index));
    return { status: 200, body: { ok: true, data: issues } };
  }
  const bySlug = /^\/v1\/newsletter\/issues\/by-slug\/([^/]+)$/.exec(path);
  if (method === 'GET' && bySlug) {
    const slug = decodeURIComponent(bySlug[1] ?? '');
    if (slug.startsWith('missing-')) return { status: 404, body: errorEnvelope('NOT_FOUND') };
    return { status: 200, body: { ok: true, data: upstreamIssue(slug) } };
  }
  if (method === 'GET' && path === '/v1/newsletter/categories') {
    return { status: 200, body: { ok: true, data: [upstreamCategory('essays', 'Essays'), upstreamCategory('notes', 'Notes')] } };
  }
  if (method === 'POST' && path === '/v1/newsletter/subscribers') {
    return {
      status: 201,
      body: {
        ok: true,
        data: {
          id: INTERNAL_VALUES.subscriberId,
          workspaceId: INTERNAL_VALUES.workspaceId,
          accountSetId: INTERNAL_VALUES.accountSetId,
          emailNormalized: 'someone@example.com',
          status: 'subscribed',
          sourceType: 'embed',
        },
      },
    };
  }
  return { status: 404, body: errorEnvelope('NOT_FOUND') };
}
