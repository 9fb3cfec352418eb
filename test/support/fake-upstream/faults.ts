/**
 * The ways a newsletter service can fail, as answers of the fake upstream (toxiproxy-style).
 * Each mode turns the healthy answer into a broken one; modes that break the connection itself
 * throw or error the body stream, which the socket server (server.ts) turns into a closed socket.
 */
export type FaultMode =
  | { kind: 'ok' }
  /** A good answer, after `ms`. */
  | { kind: 'latency'; ms: number }
  /** Reads the request and never answers (until the caller gives up, or `maxHoldMs`). */
  | { kind: 'hang' }
  /** Closes the connection before any byte of the response (`rst`: a TCP RST instead of a FIN). */
  | { kind: 'reset-before-headers'; rst?: boolean }
  /** Sends the headers and half of a good body, then breaks the connection. */
  | { kind: 'reset-mid-body' }
  /** Sends the headers, then one byte of the body every `intervalMs`. */
  | { kind: 'slow-drip'; intervalMs: number }
  /** A complete HTTP response whose JSON body stops in the middle. */
  | { kind: 'truncated-json' }
  /** A `bytes`-long body, with or without a Content-Length that says so. */
  | { kind: 'huge-body'; bytes: number; declareLength: boolean }
  /** 200 with an HTML page (a captive portal, a misrouted load balancer). */
  | { kind: 'html' }
  /** Every answer a 5xx (or any status), cycling through `statuses`. */
  | { kind: 'status-storm'; statuses: readonly number[] }
  /** 429 with this `Retry-After`. */
  | { kind: 'rate-limited'; retryAfter: string }
  /** A redirect to `location` (which a client must never follow with the key). */
  | { kind: 'redirect'; status: number; location: string }
  /** Valid JSON in the success envelope, with the wrong fields. */
  | { kind: 'wrong-shape' };

/** The upstream's own words in every error it makes up: a public answer must never carry them. */
export const FAKE_UPSTREAM_ERROR_TEXT = 'UPSTREAM-INTERNAL-ERROR-TEXT at db-shard-7';

/** A connection broken by the fake; `rst` asks the socket server for a TCP RST. */
export class ConnectionBroken extends TypeError {
  constructor(readonly rst = false) {
    super('fetch failed: the fake upstream broke the connection');
  }
}

/** Waits `ms`, or rejects when `signal` aborts (tests inject an immediate one). */
export type Delay = (ms: number, signal?: AbortSignal) => Promise<void>;

export const realDelay: Delay = (ms, signal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', abort);
      resolve();
    }, ms);
    const abort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', abort, { once: true });
  });

export interface FaultContext {
  delay: Delay;
  /** Upper bound on any one slow answer (hang, latency, drip), so nothing outlives a suite. */
  maxHoldMs: number;
  signal: AbortSignal | undefined;
  /** The next status of a storm (the fake keeps the position between calls). */
  stormStatus: (statuses: readonly number[]) => number;
  /** Headers sent on every answer. */
  headers: Record<string, string>;
  /** Internal values to put into made-up answers, as the real service would. */
  internals: { workspaceId: string; accountSetId: string; createdBy: string };
}

const CHUNK = new Uint8Array(64 * 1024).fill(0x61);

export function json(status: number, body: unknown, headers: Record<string, string>): Response {
  return new Response(JSON.stringify(body), { status, headers: { ...headers, 'Content-Type': 'application/json' } });
}

export function errorEnvelope(code: string, internals: FaultContext['internals']) {
  return { ok: false, error: { code, message: FAKE_UPSTREAM_ERROR_TEXT, details: { workspaceId: internals.workspaceId } } };
}

/** The answer `mode` makes of the healthy one (`good` is called only when the mode needs it). */
export async function faultyAnswer(mode: FaultMode, good: () => Promise<Response>, ctx: FaultContext): Promise<Response> {
  const { headers, internals } = ctx;
  switch (mode.kind) {
    case 'ok':
      return good();
    case 'latency':
      await ctx.delay(Math.min(mode.ms, ctx.maxHoldMs), ctx.signal);
      return good();
    case 'hang':
      await ctx.delay(ctx.maxHoldMs, ctx.signal);
      throw new ConnectionBroken();
    case 'reset-before-headers':
      throw new ConnectionBroken(mode.rst);
    case 'reset-mid-body': {
      const bytes = new TextEncoder().encode(await (await good()).text());
      const half = bytes.subarray(0, Math.floor(bytes.byteLength / 2));
      const body = new ReadableStream<Uint8Array>({
        start: (controller) => controller.enqueue(half),
        pull: (controller) => controller.error(new ConnectionBroken()),
      });
      return new Response(body, { status: 200, headers: { ...headers, 'Content-Type': 'application/json' } });
    }
    case 'slow-drip': {
      const bytes = new TextEncoder().encode(await (await good()).text());
      let sent = 0;
      const body = new ReadableStream<Uint8Array>({
        pull: async (controller) => {
          await ctx.delay(mode.intervalMs, ctx.signal);
          if ((sent + 1) * mode.intervalMs > ctx.maxHoldMs) return controller.error(new ConnectionBroken());
          controller.enqueue(bytes.slice(sent, sent + 1));
          sent += 1;
          if (sent >= bytes.byteLength) controller.close();
        },
      });
      return new Response(body, { status: 200, headers: { ...headers, 'Content-Type': 'application/json' } });
    }
    case 'truncated-json': {
      const text = await (await good()).text();
      return new Response(text.slice(0, Math.max(1, Math.floor(text.length * 0.6))), {
        status: 200,
        headers: { ...headers, 'Content-Type': 'application/json' },
      });
    }
    case 'huge-body':
      return hugeBody(mode.bytes, mode.declareLength, headers);
    case 'html': {
      const html = `<!doctype html><html><head><title>Gateway</title></head><body><h1>Please sign in</h1><p>${FAKE_UPSTREAM_ERROR_TEXT}</p></body></html>`;
      return new Response(html, { status: 200, headers: { ...headers, 'Content-Type': 'text/html; charset=utf-8' } });
    }
    case 'status-storm':
      return json(ctx.stormStatus(mode.statuses), errorEnvelope('INTERNAL', internals), headers);
    case 'rate-limited':
      return json(429, errorEnvelope('RATE_LIMITED', internals), { ...headers, 'Retry-After': mode.retryAfter });
    case 'redirect':
      return json(mode.status, errorEnvelope('MOVED', internals), { ...headers, Location: mode.location });
    case 'wrong-shape':
      return json(200, { ok: true, data: { id: 42, title: 'A record of some other kind', status: 7, ...internals } }, headers);
  }
}

/** `{"ok":true,"data":"aaa…"}`, `total` bytes long, produced as it is read. */
function hugeBody(total: number, declareLength: boolean, headers: Record<string, string>): Response {
  const head = new TextEncoder().encode('{"ok":true,"data":"');
  const tail = new TextEncoder().encode('"}');
  let written = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (written === 0) {
        written = head.byteLength;
        return controller.enqueue(head);
      }
      const room = total - tail.byteLength - written;
      if (room <= 0) {
        controller.enqueue(tail);
        return controller.close();
      }
      const chunk = room >= CHUNK.byteLength ? CHUNK : CHUNK.subarray(0, room);
      written += chunk.byteLength;
      controller.enqueue(chunk);
    },
  });
  const length: Record<string, string> = declareLength ? { 'Content-Length': String(total) } : {};
  return new Response(body, { status: 200, headers: { ...headers, ...length, 'Content-Type': 'application/json' } });
}
