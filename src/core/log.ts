export type LogLevel = 'info' | 'warn' | 'error';

export type LogFields = Record<string, string | number | boolean | null | undefined> & { time?: never; level?: never; event?: never };

/** Shorter is a truncated paste, not a key, and is not redacted. */
export const MIN_API_KEY_LENGTH = 8;

/** Each secret also trimmed: a Worker secret may keep a trailing newline. */
export function createRedactor(secrets: readonly unknown[]): (value: string) => string {
  const forms = new Set<string>();
  for (const secret of secrets) {
    if (typeof secret !== 'string') continue;
    for (const form of [secret, secret.trim()]) if (form.length >= MIN_API_KEY_LENGTH) forms.add(form);
  }
  // Longest first, so a form containing another is replaced whole.
  const ordered = [...forms].sort((a, b) => b.length - a.length);
  const shortest = ordered.at(-1)?.length ?? Number.POSITIVE_INFINITY;
  return (value) => {
    if (value.length < shortest) return value;
    for (const form of ordered) if (value.includes(form)) value = value.replaceAll(form, '[redacted]');
    return value;
  };
}

type LoggerOptions = { write: (line: string) => void; now?: () => number; redact?: readonly unknown[] };

/** JSON lines; `redact`'s secrets (the API key) replaced in every string, as a last defence. */
export function createLogger({ write, now = Date.now, redact: secrets = [] }: LoggerOptions): Logger {
  const redact = createRedactor(secrets);
  return {
    log(level, event, fields) {
      const line: Record<string, unknown> = { time: new Date(now()).toISOString(), level, event: redact(event) };
      for (const name in fields) {
        const value = fields[name];
        line[name] = typeof value === 'string' ? redact(value) : value;
      }
      write(JSON.stringify(line));
    },
  };
}

export const silentLogger = { log(_level: LogLevel, _event: string, _fields?: LogFields) {} };
export type Logger = typeof silentLogger;

/** `jane.doe@example.com` → `j***@example.com`: enough to follow a case in the logs, not to harvest addresses. */
export function maskEmail(email: string): string {
  const at = email.lastIndexOf('@');
  return at < 1 ? '***' : `${email[0]}***@${email.slice(at + 1).toLowerCase()}`;
}

export function maskEmailsInPath(path: string): string {
  if (!path.includes('@') && !path.includes('%40')) return path;
  return path.replace(/[^/]*(?:@|%40)[^/]*/g, (segment) => {
    try {
      return maskEmail(decodeURIComponent(segment));
    } catch {
      return maskEmail(segment);
    }
  });
}

/** Node only: lines in batches, since a system call per line would be dearer than a cached answer. */
export function createBufferedWriter(
  sink: (chunk: Uint8Array) => void,
  { flushIntervalMs = 250, maxBufferedBytes = 64 * 1024 }: { flushIntervalMs?: number; maxBufferedBytes?: number } = {},
) {
  let batch = Buffer.allocUnsafe(maxBufferedBytes);
  let used = 0;
  const flush = () => {
    if (used === 0) return;
    const chunk = batch.subarray(0, used);
    // The sink may still be writing this one (a pipe writes asynchronously).
    batch = Buffer.allocUnsafe(maxBufferedBytes);
    used = 0;
    sink(chunk);
  };
  const timer = setInterval(flush, flushIntervalMs).unref();
  return {
    write(line: string) {
      // At most 3 bytes of UTF-8 per UTF-16 unit, and the newline.
      const most = line.length * 3 + 1;
      if (used + most > batch.length) {
        flush();
        if (most > batch.length) return sink(Buffer.from(`${line}\n`));
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
