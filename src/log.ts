import { createRedactor } from './redact.js';

/** Severity of a log line. */
export type LogLevel = 'info' | 'warn' | 'error';

export type LogFields = Record<string, string | number | boolean | null | undefined>;

/** Structured JSON logging: one line per event. */
export interface Logger {
  log(level: LogLevel, event: string, fields?: LogFields): void;
}

export interface LoggerOptions {
  /** Receives one serialized JSON line at a time. */
  write: (line: string) => void;
  now?: () => number;
  /** Strings that must never appear in a line (the API key): replaced as a last line of defence. */
  redact?: readonly (string | undefined)[];
}

/** Creates a JSON-lines logger; every string value passes redaction before the line is serialized. */
export function createLogger(options: LoggerOptions): Logger {
  const { write, now = Date.now } = options;
  const redact = createRedactor(options.redact ?? []);
  // Formatting the date was half the cost of a line; under load many lines share a millisecond.
  let lastMs = Number.NaN;
  let lastTime = '';
  const timeOf = (ms: number) => {
    if (ms !== lastMs) {
      lastMs = ms;
      lastTime = new Date(ms).toISOString();
    }
    return lastTime;
  };
  return {
    log(level, event, fields) {
      const line: Record<string, unknown> = { time: timeOf(now()), level, event: redact(event) };
      for (const name in fields) {
        const value = fields[name];
        line[name] = typeof value === 'string' ? redact(value) : value;
      }
      write(JSON.stringify(line));
    },
  };
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
 * the rest of a cached request. Flushes when the buffer is large, on the interval, and on demand.
 */
export function createBufferedWriter(
  sink: (chunk: string) => void,
  options: { flushIntervalMs?: number; maxBufferedBytes?: number } = {},
): { write: (line: string) => void; flush: () => void; stop: () => void } {
  const { flushIntervalMs = 250, maxBufferedBytes = 64 * 1024 } = options;
  let buffered: string[] = [];
  let bytes = 0;
  const flush = () => {
    if (buffered.length === 0) return;
    const chunk = `${buffered.join('\n')}\n`;
    buffered = [];
    bytes = 0;
    sink(chunk);
  };
  const timer = setInterval(flush, flushIntervalMs);
  // The timer alone must not keep a stopping process alive.
  (timer as { unref?: () => void }).unref?.();
  return {
    write(line) {
      buffered.push(line);
      bytes += line.length + 1;
      if (bytes >= maxBufferedBytes) flush();
    },
    flush,
    stop() {
      clearInterval(timer);
      flush();
    },
  };
}
