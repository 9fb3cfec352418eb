import { createRedactor } from './redact.js';

/** Severity of a log line. */
export type LogLevel = 'info' | 'warn' | 'error';

/** A line's own fields: `time`, `level` and `event` are the logger's, never a caller's. */
export type LogFields = Record<string, string | number | boolean | null | undefined> & { time?: never; level?: never; event?: never };

/** Structured JSON logging: one line per event. */
export interface Logger {
  log(level: LogLevel, event: string, fields?: LogFields): void;
  /**
   * An event logged with the same fields every time: `values` in the order of `names`, and the
   * line is the one `log` would write for them (an undefined value left out), with less work per
   * line. For the access log, one line per request. `prepareEvent` falls back on `log`.
   */
  prepare?(level: LogLevel, event: string, names: readonly string[]): PreparedEvent;
}

export type LogValue = string | number | boolean | null | undefined;
export type PreparedEvent = (values: readonly LogValue[]) => void;

/** `log.prepare` where the logger has it, else the same lines through `log.log`. */
export function prepareEvent(log: Logger, level: LogLevel, event: string, names: readonly string[]): PreparedEvent {
  if (log.prepare) return log.prepare(level, event, names);
  checkFieldNames(names);
  return (values) => log.log(level, event, Object.fromEntries(names.map((name, i) => [name, values[i]])) as LogFields);
}

export interface LoggerOptions {
  /** Receives one serialized JSON line at a time. */
  write: (line: string) => void;
  now?: () => number;
  /** Strings that must never appear in a line (the API key): replaced as a last line of defence. */
  redact?: readonly (string | undefined)[];
}

/**
 * Creates a JSON-lines logger; every string value passes redaction before the line is serialized.
 * A line is `JSON.stringify({ time, level, event, ...fields })` to the byte, written out by hand:
 * on a cached hit, `JSON.stringify` of a fresh object and `toISOString` made the access line
 * cost more than the rest of the hot path's own work.
 */
export function createLogger(options: LoggerOptions): Logger {
  const { write, now = Date.now } = options;
  const redact = createRedactor(options.redact ?? []);
  return {
    log(level, event, fields) {
      let line = `{"time":"${isoTime(now())}","level":"${level}","event":${jsonString(redact(event))}`;
      for (const name in fields) {
        const value = fields[name];
        if (value === undefined) continue;
        line += `,${jsonKey(name)}:${typeof value === 'string' ? jsonString(redact(value)) : jsonScalar(value)}`;
      }
      write(`${line}}`);
    },
    prepare(level, event, names) {
      checkFieldNames(names);
      const head = `","level":"${level}","event":${jsonString(redact(event))}`;
      const keys = names.map((name) => `,${jsonKey(name)}:`);
      return (values) => {
        let line = `{"time":"${isoTime(now())}${head}`;
        for (let i = 0; i < keys.length; i += 1) {
          const value = values[i];
          if (value === undefined) continue;
          line += `${keys[i]}${typeof value === 'string' ? jsonString(redact(value)) : jsonScalar(value)}`;
        }
        write(`${line}}`);
      };
    },
  };
}

/** What `JSON.stringify` would escape in a string (and lone surrogates, which it escapes too): such a string is left to it. */
const NEEDS_ESCAPE = /[\u0000-\u001f"\\\ud800-\udfff]/;

/** `JSON.stringify(value)` for a string, without calling it for the common string that needs no escape. */
function jsonString(value: string): string {
  return NEEDS_ESCAPE.test(value) ? JSON.stringify(value) : `"${value}"`;
}

/** `JSON.stringify(value)` for a number, boolean or null. */
function jsonScalar(value: number | boolean | null): string {
  return typeof value === 'number' && !Number.isFinite(value) ? 'null' : String(value);
}

const jsonKeys = new Map<string, string>();
/** Field names are few and fixed by the code: each is quoted once. */
function jsonKey(name: string): string {
  let key = jsonKeys.get(name);
  if (key === undefined) {
    key = JSON.stringify(name);
    if (jsonKeys.size < 1000) jsonKeys.set(name, key);
  }
  return key;
}

const MILLISECONDS = Array.from({ length: 1000 }, (_, ms) => String(ms).padStart(3, '0'));
let isoSecond = Number.NaN;
let isoSecondPrefix = '';
/** `new Date(ms).toISOString()`, formatting the date once a second: per line it was half the cost of the line. */
function isoTime(ms: number): string {
  const second = Math.floor(ms / 1000);
  if (second !== isoSecond) {
    // `2026-11-22T09:30:00.`: everything up to the milliseconds (throws on an invalid time, as toISOString does).
    isoSecondPrefix = new Date(second * 1000).toISOString().slice(0, -4);
    isoSecond = second;
  }
  return `${isoSecondPrefix}${MILLISECONDS[Math.floor(ms) - second * 1000]}Z`;
}

/** `time`, `level` and `event` are the line's own (LogFields says so to the compiler). */
function checkFieldNames(names: readonly string[]): void {
  for (const name of names) if (name === 'time' || name === 'level' || name === 'event') throw new Error(`"${name}" is a log line's own field`);
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
 * does not outlive its request as a string: kept as strings until the flush, lines cost a cached
 * hit about 7% more instructions (bench/instructions.mjs). Flushes when the batch is full, on the
 * interval, and on demand. Node only (`Buffer`).
 */
export function createBufferedWriter(
  sink: (chunk: Uint8Array) => void,
  options: { flushIntervalMs?: number; maxBufferedBytes?: number } = {},
): { write: (line: string) => void; flush: () => void; stop: () => void } {
  const { flushIntervalMs = 250, maxBufferedBytes = 64 * 1024 } = options;
  let batch = Buffer.allocUnsafe(maxBufferedBytes);
  let used = 0;
  const flush = () => {
    if (used === 0) return;
    const chunk = batch.subarray(0, used);
    // A new batch: the sink may still be writing this one (a pipe writes asynchronously).
    batch = Buffer.allocUnsafe(maxBufferedBytes);
    used = 0;
    sink(chunk);
  };
  const timer = setInterval(flush, flushIntervalMs);
  // The timer alone must not keep a stopping process alive.
  (timer as { unref?: () => void }).unref?.();
  return {
    write(line) {
      // At most 3 bytes of UTF-8 per UTF-16 unit, and the newline.
      const most = line.length * 3 + 1;
      if (used + most > batch.length) {
        flush();
        if (most > batch.length) {
          sink(Buffer.from(`${line}\n`));
          return;
        }
      }
      used += batch.write(line, used);
      batch[used++] = 10; // "\n"
      if (used >= batch.length) flush();
    },
    flush,
    stop() {
      clearInterval(timer);
      flush();
    },
  };
}
