import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { AccessLog } from './access-log.js';
import type { FreshReply, FreshRequest } from './fresh-replies.js';
import type { RenderedJson } from './reads/rendered-json.js';

export interface NodeHotPathOptions {
  freshReply: (request: FreshRequest) => FreshReply | undefined;
  logAccess: AccessLog;
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
  const { freshReply, logAccess } = options;
  let served = 0;
  /** The bytes of each rendered body, encoded once rather than per request (kept while the cache holds it). */
  const encoded = new WeakMap<RenderedJson, Buffer>();

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
    if (!reply.withBody) {
      res.writeHead(reply.status, reply.headers);
      res.end();
      return;
    }
    let body = encoded.get(reply.rendered);
    if (body === undefined) {
      body = Buffer.from(reply.rendered.body);
      encoded.set(reply.rendered, body);
    }
    // As @hono/node-server writes a body of known length: Node adds Content-Length after its
    // own Date and Connection lines, so the bytes are those of the general pipeline.
    (res as unknown as { _contentLength: number | null })._contentLength = body.length;
    res.writeHead(reply.status, reply.headers);
    res.end(body);
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
  };
}
