import { validateHeaderName, validateHeaderValue, type IncomingMessage, type RequestListener, type ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { AccessLog } from '../core/http/access-log.js';
import type { FreshReply, FreshRequest } from './fresh-replies.js';
import type { CacheState } from '../core/reads/read-through-cache.js';

export interface NodeHotPathOptions {
  freshReply: (request: FreshRequest) => FreshReply | undefined;
  logAccess: AccessLog;
}

/**
 * Node's hot path for fresh cached reads: a `node:http` request listener in front of
 * @hono/node-server's that answers a GET from a fresh cached copy with `writeHead` and `end`
 * (`freshReply`, the same rules as the general pipeline) and hands it to the same access log
 * (a line, or a count with ACCESS_LOG=summary); every other request goes on to `general` untouched. Why a second path rather than
 * one pipeline, by measurement: docs/node-http.md.
 */
export function createNodeHotPath(options: NodeHotPathOptions) {
  const { freshReply, logAccess } = options;
  // A fresh hit only counted in ACCESS_LOG's summary, with no metric, needs no clock.
  const timed = logAccess.freshHitsTimed;
  let served = 0;
  /** Each header record as `writeHead`'s flat array and the body's bytes (node/fresh-replies.ts keeps one record per cached copy, origin and status). */
  const preparedReplies = new WeakMap<Readonly<Record<string, string>>, PreparedReply>();
  const hostVerdicts = new Map<string, boolean>();
  /** The last Host judged and its verdict: most requests repeat it. */
  let lastHost: string | undefined;
  let lastVerdict = false;

  /**
   * Whether the URL standard reads `host` back as sent (lower case, no default port, no userinfo,
   * a canonical IPv4 address): @hono/node-server then builds the request URL from it without a
   * 400, so both paths would answer alike. Any other Host is left to the general pipeline, which
   * decides. Hosts are few (the service's own names): a verdict is kept for each of the first
   * MAX_HOST_VERDICTS, so a client making Hosts up cannot grow the map.
   */
  function isCanonicalHost(host: string): boolean {
    if (host === lastHost) return lastVerdict;
    const keptVerdict = hostVerdicts.get(host);
    if (keptVerdict !== undefined) {
      lastHost = host;
      lastVerdict = keptVerdict;
      return keptVerdict;
    }
    let verdict: boolean;
    try {
      verdict = new URL(`http://${host}`).host === host;
    } catch {
      verdict = false;
    }
    if (hostVerdicts.size < MAX_HOST_VERDICTS) hostVerdicts.set(host, verdict);
    lastHost = host;
    lastVerdict = verdict;
    return verdict;
  }

  function serveFresh(req: IncomingMessage, res: ServerResponse): boolean {
    const startedAt = timed ? performance.now() : 0;
    const { method, url, headers } = req;
    const host = headers.host;
    if (
      method === undefined ||
      url === undefined ||
      url.charCodeAt(0) !== 47 || // "/": not an absolute-form target
      host === undefined ||
      !isCanonicalHost(host) ||
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
      acceptEncoding: headers['accept-encoding'],
    });
    if (reply === undefined) return false;
    served += 1;
    let prepared = preparedReplies.get(reply.headers);
    if (prepared === undefined) {
      prepared = prepareReply(reply.headers, reply.body);
      preparedReplies.set(reply.headers, prepared);
    }
    // Per request only the id is new: it goes in its place in the copy's own array, which
    // `writeHead` has read into the response head by the time it returns (no copy per request),
    // and taken out again after, so the array does not keep it (a new id is a slice of its batch).
    const { headerLines, requestIdAt } = prepared;
    headerLines[requestIdAt] = reply.requestId;
    res.writeHead(reply.status, headerLines);
    headerLines[requestIdAt] = '';
    res.end(prepared.body);
    // The access log's shared part is worked out once per copy and path (a record answers one
    // status, this path only GETs, and the route follows from the path).
    let access = prepared.access;
    if (access === undefined || access.path !== reply.path || access.cache !== reply.cache) {
      const { path, route, status, cache } = reply;
      access = { path, cache, log: logAccess.freshHit({ method, path, route, status, cache }) };
      prepared.access = access;
    }
    access.log(startedAt, reply.requestId);
    return true;
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

const MAX_HOST_VERDICTS = 32;

interface PreparedReply {
  /** `[name, value, name, value, …]` for `writeHead`, `Content-Length` last, the request id's value empty. */
  headerLines: string[];
  /** Where the request id's value goes in `headerLines`. */
  requestIdAt: number;
  /** The body as bytes, encoded once; undefined for a 304. */
  body: Buffer | undefined;
  /** The access log of answers sent from it, with what it was made for. */
  access?: { path: string; cache: CacheState; log: (startedAt: number, requestId: string | undefined) => void };
}

/** A header record as `writeHead`'s flat array, each header checked once as `writeHead` checks it. */
function prepareReply(headers: Readonly<Record<string, string>>, body: string | Uint8Array<ArrayBuffer> | undefined): PreparedReply {
  const headerLines: string[] = [];
  let requestIdAt = -1;
  for (const name in headers) {
    const value = headers[name]!;
    validateHeaderName(name);
    if (name === 'X-Request-Id') requestIdAt = headerLines.length + 1;
    else validateHeaderValue(name, value);
    headerLines.push(name, value);
  }
  if (requestIdAt === -1) throw new Error('a fresh reply without X-Request-Id');
  const bytes =
    body === undefined
      ? undefined
      : typeof body === 'string'
        ? Buffer.from(body)
        : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  if (bytes !== undefined) headerLines.push('Content-Length', String(bytes.length));
  return { headerLines, requestIdAt, body: bytes };
}
