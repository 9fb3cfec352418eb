import { ServerResponse, validateHeaderName, validateHeaderValue, type IncomingMessage, type RequestListener } from 'node:http';
import type { AccessLog } from './access-log.js';
import type { FreshReply, FreshRequest } from './fresh-replies.js';

export interface NodeHotPathOptions {
  freshReply: (request: FreshRequest) => FreshReply | undefined;
  logAccess: AccessLog;
  /**
   * Whether header lines go into the head Node has built (the default where Node builds one
   * as expected, see SPLICES_HEAD), or every header through `writeHead`; both answer the same bytes.
   */
  spliceHead?: boolean;
}

/**
 * A Host that @hono/node-server puts into the request URL as it is (its own test): for any
 * other, it normalises or refuses the URL, so the general pipeline answers.
 */
const HOST_AS_IS = /^[a-z0-9._-]+(?::(?:[1-5]\d{3,4}|[6-9]\d{3}))?$/;

/**
 * Node's hot path for fresh cached reads: a `node:http` request listener in front of
 * @hono/node-server's that answers a GET from a fresh cached copy straight to the socket
 * (`freshReply`, the same rules as the general pipeline) and logs it with the same access-log
 * function; every other request goes on to `general` untouched. A cached hit through Request,
 * Response, Hono's router, two middleware layers and their promises cost twice what bare Hono
 * does; what the answer itself needs is a few µs.
 */
export function createNodeHotPath(options: NodeHotPathOptions) {
  const { freshReply, logAccess, spliceHead = SPLICES_HEAD } = options;
  let served = 0;
  /** The header lines of each header record (fresh-replies.ts keeps one per cached copy, origin and status). */
  const lines = new WeakMap<Readonly<Record<string, string>>, HeaderLines>();

  function serveFresh(req: IncomingMessage, res: ServerResponse): boolean {
    const startedAt = performance.now();
    const { method, url, headers } = req;
    const host = headers.host;
    if (
      method === undefined ||
      url === undefined ||
      url.charCodeAt(0) !== 47 || // "/": not an absolute-form target
      host === undefined ||
      !HOST_AS_IS.test(host) ||
      (req.socket as { encrypted?: boolean }).encrypted ||
      // HTTP/1.0: @hono/node-server sends Content-Length among the headers, not after Node's own.
      req.httpVersion !== '1.1' ||
      // A request body is unusual on a GET: the general pipeline decides what it means.
      headers['content-length'] !== undefined ||
      headers['transfer-encoding'] !== undefined
    ) {
      return false;
    }
    const reply = freshReply({
      method,
      target: url,
      origin: headers.origin,
      requestId: headers['x-request-id'] as string | undefined,
      ifNoneMatch: headers['if-none-match'],
      accept: headers.accept,
    });
    if (reply === undefined) return false;
    served += 1;
    writeReply(res, reply);
    logAccess({ method, path: reply.path, route: reply.route, status: reply.status, startedAt, cache: reply.cache, requestId: reply.requestId });
    return true;
  }

  function writeReply(res: ServerResponse, reply: FreshReply): void {
    let known = lines.get(reply.headers);
    if (known === undefined) {
      known = headerLines(reply.headers, reply.body);
      lines.set(reply.headers, known);
    }
    const internals = res as unknown as OutgoingInternals;
    // As @hono/node-server writes a body of known length: Node adds Content-Length after its
    // own Date and Connection lines, so the bytes are those of the general pipeline.
    if (reply.body !== undefined) internals._contentLength = known.bodyBytes;
    if (spliceHead) {
      // Node writes the status line and its own lines (Date, Connection, Keep-Alive,
      // Content-Length), deciding keep-alive as always; ours go between, as `writeHead` would
      // put them, already checked: per request only the request id is new.
      res.writeHead(reply.status);
      const head = internals._header;
      const at = head.indexOf('\r\n') + 2;
      internals._header = `${head.slice(0, at)}${known.before}${reply.requestId}${known.after}${head.slice(at)}`;
    } else {
      res.writeHead(reply.status, { ...reply.headers, 'X-Request-Id': reply.requestId });
    }
    res.end(reply.body);
  }

  return {
    /** `general` with the hot path in front of it. */
    inFrontOf(general: RequestListener): RequestListener {
      return function listener(req, res) {
        if (!serveFresh(req, res)) general(req, res);
      };
    },
    /** How many requests the hot path answered (the differential test's witness). */
    served: () => served,
    /** Whether header lines go into Node's head (see `spliceHead`). */
    splicesHead: spliceHead,
  };
}

/** A header record as the lines `writeHead` writes for it, split at the request id's value. */
interface HeaderLines {
  before: string;
  after: string;
  /** The body's length in bytes (UTF-8), for `Content-Length`; 0 for a reply without one. */
  bodyBytes: number;
}

/** `Name: value` and CRLF per header, in order, each checked once as `writeHead` checks it. */
function headerLines(headers: Readonly<Record<string, string>>, body: string | undefined): HeaderLines {
  let before = '';
  let after: string | undefined;
  for (const name in headers) {
    validateHeaderName(name);
    if (name === 'X-Request-Id') {
      before += `${name}: `;
      after = '\r\n';
      continue;
    }
    const value = headers[name]!;
    validateHeaderValue(name, value);
    if (after === undefined) before += `${name}: ${value}\r\n`;
    else after += `${name}: ${value}\r\n`;
  }
  if (after === undefined) throw new Error('a fresh reply without X-Request-Id');
  return { before, after, bodyBytes: body === undefined ? 0 : Buffer.byteLength(body) };
}

/** The two fields of Node's OutgoingMessage the hot path sets: the body length and the head it will write. */
interface OutgoingInternals {
  _contentLength: number | null;
  _header: string;
}

/**
 * Whether this Node keeps a response's head as `_header` (status line first) once `writeHead`
 * has run, and sends what that field holds then, as Node 20 to 26 do: then the hot path puts its
 * header lines into it. Checked once, on a response to no request, by doing just that and reading
 * what it would send; otherwise every header goes through `writeHead`.
 */
const SPLICES_HEAD = (() => {
  try {
    const probe = new ServerResponse({ method: 'GET', httpVersionMajor: 1, httpVersionMinor: 1, headers: {} } as IncomingMessage);
    const internals = probe as unknown as OutgoingInternals & { outputData?: { data: unknown }[] };
    internals._contentLength = 2;
    probe.writeHead(200);
    const head = internals._header;
    if (typeof head !== 'string' || !head.startsWith('HTTP/1.1 200 OK\r\n') || !head.endsWith('Content-Length: 2\r\n\r\n')) return false;
    const spliced = head.replace('\r\n', '\r\nX-Probe: 1\r\n');
    internals._header = spliced;
    if (internals._header !== spliced) return false;
    // Without a socket, what would be written is queued: it must be the head as set here.
    probe.end('ok');
    const sent = internals.outputData?.map((chunk) => String(chunk.data)).join('');
    return sent === `${spliced}ok`;
  } catch {
    return false;
  }
})();
