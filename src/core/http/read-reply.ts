import type { Context, TypedResponse } from 'hono';
import type { PublicRead } from '../reads/public-reads.js';
import type { WaitUntil } from '../reads/read-through-cache.js';
import type { EncodedCopy } from '../reads/rendered-json.js';
import type { HeaderRules } from './response-headers.js';

export type ReadAnswer<T> = (Response & TypedResponse<T, 200, 'json'>) | (Response & TypedResponse<null, 304, 'body'>);

export type SendRead = <T>(c: Context, read: PublicRead<T>, requestId: string) => ReadAnswer<T>;

export type RequestHeader = (c: Context, name: string) => string | undefined;

export const headerOfRequest: RequestHeader = (c, name) => c.req.header(name);

/** What `node:http` parsed (joined, trimmed and checked), which `c.req.header` would check again. */
export const headerOfIncoming: RequestHeader = (c, name) => {
  const value = (c.env as { incoming: { headers: Record<string, string | string[] | undefined> } }).incoming.headers[name];
  return typeof value === 'string' ? value : undefined;
};

type HeaderRecord = Readonly<Record<string, string>>;
type ReplyRoute = { contentType: string; cacheControl: string; vary: string | undefined };

const MAX_RECORDS_PER_COPY = 16;

/** Besides the request id, a fresh copy's headers depend only on status, coding and granted origin: made once per copy. */
export function createReadReplies(rules: HeaderRules, route: ReplyRoute, requestHeader: RequestHeader): SendRead {
  const records = { 200: new WeakMap<object, Map<string, HeaderRecord>>(), 304: new WeakMap<object, Map<string, HeaderRecord>>() };
  const chooseCopy = createCopyChooser();

  // A hit copies a kept record and adds its own request id. V8 copies fast while it meets at most four record shapes, and
  // records with the same names share one only when built alike: so each is kept without an id, rebuilt from `{}`.
  function headersOf(c: Context, read: PublicRead, copy: EncodedCopy | undefined, status: 200 | 304, requestId: string): HeaderRecord {
    const origin = requestHeader(c, 'origin');
    const granted = rules.origins.granted(origin) ?? '';
    const reusable = read.state === 'HIT' && read.ageSeconds === undefined;
    const sent = copy ?? read.rendered;
    const byOrigin = reusable ? records[status].get(sent) : undefined;
    const kept = byOrigin?.get(granted);
    // Two copies, not one: 304s apart, a 200's records have four shapes at most (coded or not, an origin granted or not).
    if (kept !== undefined) return status === 304 ? { ...kept, 'X-Request-Id': requestId } : { ...kept, 'X-Request-Id': requestId };
    const record = rules.headersFor({ path: c.req.path, origin, requestId: '' });
    record['Cache-Control'] = route.cacheControl;
    record.ETag = sent.etag;
    record['X-Cache'] = read.state;
    if (read.ageSeconds !== undefined) record.Age = String(read.ageSeconds);
    // A 304 carries the Vary its 200 would (RFC 9110 §15.4.5).
    const varies = Boolean(read.rendered.encoded?.length);
    if (route.vary !== undefined || varies) record.Vary = [record.Vary, route.vary, varies && 'Accept-Encoding'].filter(Boolean).join(', ');
    if (status === 200) record['Content-Type'] = route.contentType;
    if (status === 200 && copy !== undefined) record['Content-Encoding'] = copy.coding;
    if (reusable && byOrigin === undefined) records[status].set(sent, new Map([[granted, Object.fromEntries(Object.entries(record))]]));
    else if (reusable && byOrigin!.size < MAX_RECORDS_PER_COPY) byOrigin!.set(granted, Object.fromEntries(Object.entries(record)));
    return Object.assign(record, { 'X-Request-Id': requestId });
  }

  return function sendRead(c, read, requestId) {
    const { rendered } = read;
    const copy = chooseCopy(requestHeader(c, 'accept-encoding'), rendered.encoded);
    const status = ifNoneMatchMatches(requestHeader(c, 'if-none-match'), (copy ?? rendered).etag) ? 304 : 200;
    const headers = headersOf(c, read, copy, status, requestId);
    // A plain header record and bytes: @hono/node-server writes it straight to the socket.
    return new Response(status === 304 ? null : (copy?.body ?? rendered.bytes), { status, headers }) as ReadAnswer<never>;
  } as SendRead;
}

export function ifNoneMatchMatches(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  if (header === etag || header.trim() === '*') return true;
  return header.split(',').some((candidate) => candidate.trim().replace(/^W\//, '') === etag);
}

/** Looked up only when a load needs it: `c.executionCtx` throws on Node (the work simply runs), dear on every request. */
export function waitUntilOf(c: Context): WaitUntil {
  return (promise) => {
    try {
      c.executionCtx.waitUntil(promise);
    } catch {}
  };
}

/** Clients send a handful of distinct headers: the first few are parsed once; made-up ones cannot grow the map. */
const MAX_REMEMBERED_HEADERS = 64;
const QVALUE = /^(?:0(?:\.\d{0,3})?|1(?:\.0{0,3})?)$/;
const MAX_CODINGS = 32;

// RFC 9110 §12.5.3; `undefined` (the body as it is) also when no kept copy is acceptable, as the RFC advises.
export function createCopyChooser() {
  const rememberedWeights = new Map<string, ReadonlyMap<string, number>>();
  return function chooseCopy(acceptEncoding: string | undefined, copies: readonly EncodedCopy[] | undefined): EncodedCopy | undefined {
    if (!copies?.length || !acceptEncoding) return undefined;
    let weights = rememberedWeights.get(acceptEncoding);
    if (weights === undefined) {
      weights = weightsOf(acceptEncoding);
      if (rememberedWeights.size < MAX_REMEMBERED_HEADERS) rememberedWeights.set(acceptEncoding, weights);
    }
    let best: EncodedCopy | undefined;
    let bestWeight = 0;
    const identity = weights.get('identity') ?? weights.get('*') ?? 0;
    for (const copy of copies) {
      const weight = weights.get(copy.coding) ?? weights.get('*') ?? 0;
      if (weight > bestWeight) [best, bestWeight] = [copy, weight];
    }
    return best !== undefined && bestWeight >= identity ? best : undefined;
  };
}

// `gzip;q=0.8, br` → gzip 0.8, br 1; a malformed weight (RFC 9110 §12.4.2) counts as 0.
function weightsOf(header: string): ReadonlyMap<string, number> {
  const weights = new Map<string, number>();
  for (const part of header.split(',').slice(0, MAX_CODINGS)) {
    const [name = '', ...parameters] = part.split(';');
    const coding = name.trim().toLowerCase();
    if (coding === '' || weights.has(coding)) continue;
    let weight = 1;
    for (const parameter of parameters) {
      const [key = '', value = ''] = parameter.split('=');
      if (key.trim().toLowerCase() === 'q') weight = QVALUE.test(value.trim()) ? Number(value.trim()) : 0;
    }
    weights.set(coding, weight);
  }
  return weights;
}
