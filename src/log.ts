import { createRedactor } from './redact.js';

/** Severity of a log line. */
export type LogLevel = 'info' | 'warn' | 'error';

/** A line's own fields: `time`, `level` and `event` are the logger's, never a caller's. */
export type LogFields = Record<string, string | number | boolean | null | undefined> & { time?: never; level?: never; event?: never };

/** Structured JSON logging: one line per event. */
export interface Logger {
  log(level: LogLevel, event: string, fields?: LogFields): void;
  /**
   * The access line of answers alike but for their time and request id (one per cached copy on
   * Node's fresh-read path): the fields that do not change formatted once, and a function that
   * writes one line for a request, what `log('info', 'request', fields)` writes, byte for byte.
   * A logger without it gets `log`; `createLogger`'s writes it from a template (see there).
   */
  requestLine?(fields: RepeatedRequestFields): (ms: number, requestId: string | undefined) => void;
}

/**
 * The access line's fields that answers from one cached copy share. The line holds them in this
 * order, with `ms` after `status` and `requestId` last (access-log.ts).
 */
export interface RepeatedRequestFields {
  method: string;
  path: string;
  status: number;
  cache: string | undefined;
}

/** An access line from what differs between requests: the time it was logged, its milliseconds and its request id. */
export interface RequestLineFormat {
  (time: number, ms: number, requestId: string | undefined): string;
  /**
   * The same line and its newline as UTF-8 written into `into` at `at`, returning where they
   * end, or -1 (nothing written) when this id must go through the text: one JSON would escape or
   * redaction would change. `into` must have `maxBytes` and the id's length free at `at`.
   */
  writeLine?: (into: Uint8Array, at: number, time: number, ms: number, requestId: string) => number;
  /** The most bytes `writeLine` writes besides the request id's. */
  maxBytes?: number;
}

export interface LoggerOptions {
  /** Receives one serialized JSON line at a time. */
  write: (line: string) => void;
  /**
   * Takes an access line's values, to format the line later, in order with the lines `write`
   * takes: the `defer` of the writer whose `write` this is (createBufferedWriter's). Without it,
   * the line is formatted at once.
   */
  defer?: (format: RequestLineFormat, time: number, ms: number, requestId: string | undefined) => void;
  now?: () => number;
  /** Strings that must never appear in a line (the API key): replaced as a last line of defence. */
  redact?: readonly (string | undefined)[];
}

/**
 * Creates a JSON-lines logger: a line is `JSON.stringify({ time, level, event, ...fields })`,
 * every string value passing redaction first. The access line, one per request, is written from
 * a template instead, to the same bytes, its fields but the time and request id formatted once
 * per cached copy: `JSON.stringify` of it cost more than a twentieth of a cached hit (measured
 * in docs/node-http.md). With `defer`, a request keeps only the line's values, and the line is
 * formatted with others in a batch: formatted inside each request, it cost about 4% of a cached
 * hit more (docs/performance.md). A deferring writer writes the line's bytes straight into its
 * batch (`writeLine`) where the request id needs no escape, as nearly all do: about 1% of a
 * cached hit less than the text (docs/performance.md, "OWASP's REST set and the access line as
 * bytes").
 */
export function createLogger(options: LoggerOptions): Logger {
  const { write, defer, now = Date.now } = options;
  const redact = createRedactor(options.redact ?? []);
  const isoTime = createIsoTime();
  return {
    log(level, event, fields) {
      const line: Record<string, unknown> = { time: isoTime(now()), level, event: redact(event) };
      for (const name in fields) {
        const value = fields[name];
        line[name] = typeof value === 'string' ? redact(value) : value;
      }
      write(JSON.stringify(line));
    },
    requestLine({ method, path, status, cache }) {
      const middle = `","level":"info","event":"request","method":${jsonString(redact(method))},"path":${jsonString(redact(path))},"status":${jsonNumber(status)},"ms":`;
      const cacheField = cache === undefined ? '' : `,"cache":${jsonString(redact(cache))}`;
      const format: RequestLineFormat = (time, ms, requestId) => {
        const idField = requestId === undefined ? '' : `,"requestId":${jsonString(redact(requestId))}`;
        return `{"time":"${isoTime(time)}${middle}${jsonNumber(ms)}${cacheField}${idField}}`;
      };
      if (defer) {
        Object.assign(format, lineWriter(middle, `${cacheField},"requestId":"`, redact));
        return (ms, requestId) => defer(format, now(), ms, requestId);
      }
      return (ms, requestId) => write(format(now(), ms, requestId));
    },
  };
}

const encoder = new TextEncoder();
/** A request id JSON writes as it is, in ASCII: what every generated id and nearly every echoed one is. */
const PLAIN_ID = /^[\w=-]*$/;
/** The most bytes of `{"time":"` and an ISO time up to its second (`+275760-09-13T00:00:00.`, the widest year). */
const TIME_HEAD_LENGTH = 9 + 24;
/** The longest number JSON writes (`-0.0000012345678901234567`). */
const MAX_NUMBER_LENGTH = 25;

/**
 * `writeLine` of an access line whose fixed parts are `middle` (after the time, up to `ms`'s
 * value) and `beforeId` (after `ms`, up to the id's value): the bytes of what the template writes,
 * the fixed parts encoded once and the time's head once a second (as createIsoTime keeps its
 * text: going through that text and copying it cost 100 ns a line, a third of what bytes save).
 */
function lineWriter(middle: string, beforeId: string, redact: (value: string) => string): Required<Pick<RequestLineFormat, 'writeLine' | 'maxBytes'>> {
  const middleBytes = encoder.encode(middle);
  const beforeIdBytes = encoder.encode(beforeId);
  let second = Number.NaN;
  let timeHead = new Uint8Array(0);
  // The id's closing quote and brace, and the newline.
  const tail = encoder.encode('"}\n');
  /** Short ASCII text, such as a number as JSON writes it, written a byte a character. */
  const writeAscii = (into: Uint8Array, at: number, text: string) => {
    for (let i = 0; i < text.length; i += 1) into[at + i] = text.charCodeAt(i);
    return at + text.length;
  };
  return {
    // The time's head, three digits of milliseconds and Z, a number, the id's quotes and brace, the newline.
    maxBytes: TIME_HEAD_LENGTH + 4 + middleBytes.length + MAX_NUMBER_LENGTH + beforeIdBytes.length + tail.length,
    writeLine(into, at, time, ms, requestId) {
      if (!PLAIN_ID.test(requestId) || redact(requestId) !== requestId) return -1;
      const atSecond = Math.floor(time / 1000);
      if (atSecond !== second) {
        timeHead = encoder.encode(`{"time":"${isoUpToSecond(atSecond)}`);
        second = atSecond;
      }
      into.set(timeHead, at);
      at = writeAscii(into, at + timeHead.length, isoMilliseconds(time, atSecond));
      into.set(middleBytes, at);
      at = writeAscii(into, at + middleBytes.length, jsonNumber(ms));
      into.set(beforeIdBytes, at);
      at = writeAscii(into, at + beforeIdBytes.length, requestId);
      into.set(tail, at);
      return at + tail.length;
    },
  };
}

/** Characters JSON writes escaped (quote, backslash, controls) and lone surrogates: such a string goes through `JSON.stringify`. */
const JSON_ESCAPED = /["\\\u0000-\u001f\ud800-\udfff]/;

/** A string as JSON writes it. */
function jsonString(value: string): string {
  return JSON_ESCAPED.test(value) ? JSON.stringify(value) : `"${value}"`;
}

/** A number as JSON writes it (`null` for NaN and the infinities). */
function jsonNumber(value: number): string {
  return Number.isFinite(value) ? String(value) : 'null';
}

/**
 * `new Date(time).toISOString()`, with the part up to the second formatted once a second and the
 * milliseconds appended: `toISOString` alone cost more than a twentieth of a cached hit, more than
 * the rest of its log line but `JSON.stringify` (measured in docs/node-http.md).
 */
export function createIsoTime(): (time: number) => string {
  let second = Number.NaN;
  let upToSecond = '';
  return (time) => {
    const at = Math.floor(time / 1000);
    if (at !== second) {
      upToSecond = isoUpToSecond(at);
      second = at;
    }
    return `${upToSecond}${isoMilliseconds(time, at)}`;
  };
}

/** `…T21:30:05.000Z` of the second `at` without its `000Z`; throws as toISOString does for a time out of range. */
function isoUpToSecond(at: number): string {
  return new Date(at * 1000).toISOString().slice(0, -4);
}

/** The milliseconds of `time` past its second `at`, and the Z, as toISOString ends. */
function isoMilliseconds(time: number, at: number): string {
  return `${String(Math.floor(time) - at * 1000).padStart(3, '0')}Z`;
}

/** A logger that drops everything (the default where none is given). */
export const silentLogger: Logger = { log() {} };

/** `jane.doe@example.com` → `j***@example.com`: enough to follow a case in the logs, not to harvest addresses. */
export function maskEmail(email: string): string {
  const at = email.lastIndexOf('@');
  if (at < 1) return '***';
  return `${email[0]}***@${email.slice(at + 1).toLowerCase()}`;
}

const EMAIL_LIKE_SEGMENT = /[^/]*(?:@|%40)[^/]*/g;

/**
 * A request path for the access log with every segment holding an `@` (raw or `%40`) masked
 * like an address: `/api/issues/jane.doe@example.com` → `/api/issues/j***@example.com`.
 */
export function maskEmailsInPath(path: string): string {
  if (!path.includes('@') && !path.includes('%40')) return path;
  return path.replace(EMAIL_LIKE_SEGMENT, (segment) => maskEmail(safeDecode(segment)));
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/**
 * Buffers lines and writes them in batches: a synchronous write per request costs more than
 * the rest of a cached request. Each line is encoded into the batch's bytes as it comes, so it
 * does not outlive its request as a string (both measured in docs/node-http.md). An access line
 * given to `defer` is kept as its values (its request id among them) and formatted, with every
 * other one waiting, when a line is written after it, at the flush, or by the call that brings
 * the `maxDeferredLines`th: so lines keep their order, and at most that many wait as values.
 * Flushes when the batch is full, on the interval, and on demand. Node only (`Buffer`).
 */
export function createBufferedWriter(
  sink: (chunk: Uint8Array) => void,
  options: { flushIntervalMs?: number; maxBufferedBytes?: number; maxDeferredLines?: number } = {},
): {
  write: (line: string) => void;
  defer: NonNullable<LoggerOptions['defer']>;
  flush: () => void;
  stop: () => void;
} {
  const { flushIntervalMs = 250, maxBufferedBytes = 64 * 1024, maxDeferredLines = 256 } = options;
  let batch = Buffer.allocUnsafe(maxBufferedBytes);
  let used = 0;
  /** Deferred access lines, four entries each: format, time, ms, request id (no object per line). */
  let deferred: unknown[] = [];
  const sendBatch = () => {
    if (used === 0) return;
    const chunk = batch.subarray(0, used);
    // A new batch: the sink may still be writing this one (a pipe writes asynchronously).
    batch = Buffer.allocUnsafe(maxBufferedBytes);
    used = 0;
    sink(chunk);
  };
  const append = (line: string) => {
    // At most 3 bytes of UTF-8 per UTF-16 unit, and the newline.
    const most = line.length * 3 + 1;
    if (used + most > batch.length) {
      sendBatch();
      if (most > batch.length) {
        sink(Buffer.from(`${line}\n`));
        return;
      }
    }
    used += batch.write(line, used);
    batch[used++] = 10; // "\n"
    if (used >= batch.length) sendBatch();
  };
  /** One access line: as bytes straight into the batch where the line can, else as its text. */
  const appendLine = (format: RequestLineFormat, time: number, ms: number, requestId: string | undefined) => {
    if (format.writeLine !== undefined && requestId !== undefined) {
      const most = format.maxBytes! + requestId.length;
      if (used + most > batch.length) sendBatch();
      if (most <= batch.length) {
        const end = format.writeLine(batch, used, time, ms, requestId);
        if (end !== -1) {
          used = end;
          if (used >= batch.length) sendBatch();
          return;
        }
      }
    }
    append(format(time, ms, requestId));
  };
  const formatDeferred = () => {
    if (deferred.length === 0) return;
    const lines = deferred;
    deferred = [];
    for (let i = 0; i < lines.length; i += 4) {
      try {
        appendLine(lines[i] as RequestLineFormat, lines[i + 1] as number, lines[i + 2] as number, lines[i + 3] as string | undefined);
      } catch (error) {
        // The lines after it still wait, in order, for the next flush.
        deferred = [...lines.slice(i + 4), ...deferred];
        throw error;
      }
    }
  };
  const flush = () => {
    formatDeferred();
    sendBatch();
  };
  const timer = setInterval(flush, flushIntervalMs);
  // The timer alone must not keep a stopping process alive.
  (timer as { unref?: () => void }).unref?.();
  return {
    write(line) {
      formatDeferred();
      append(line);
    },
    defer(format, time, ms, requestId) {
      deferred.push(format, time, ms, requestId);
      if (deferred.length >= 4 * maxDeferredLines) formatDeferred();
    },
    flush,
    stop() {
      clearInterval(timer);
      flush();
    },
  };
}

