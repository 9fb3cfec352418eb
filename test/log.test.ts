import { describe, expect, expectTypeOf, it, vi } from 'vitest';
import { createBufferedWriter, createLogger, maskEmail, maskEmailsInPath, type LogFields, type RequestLineFormat } from '../src/log.js';
import { createFakeClock } from './helpers.js';

function capture(options: { redact?: string[] } = {}) {
  const clock = createFakeClock(Date.UTC(2026, 10, 22, 9, 30, 0, 250));
  const lines: string[] = [];
  const log = createLogger({ write: (line) => lines.push(line), now: clock.now, ...options });
  return { log, lines, clock, parsed: () => lines.map((line) => JSON.parse(line) as Record<string, unknown>) };
}

describe('createLogger', () => {
  it('writes one JSON line per event with the time of the injected clock', () => {
    const { log, parsed, clock } = capture();
    log.log('info', 'request', { method: 'GET', status: 200 });
    log.log('warn', 'request', { method: 'HEAD', status: 304 });
    clock.advance(1);
    log.log('error', 'upstream_failure', { kind: 'auth' });
    clock.advance(60_000);
    log.log('info', 'shutting_down');
    expect(parsed()).toEqual([
      { time: '2026-11-22T09:30:00.250Z', level: 'info', event: 'request', method: 'GET', status: 200 },
      { time: '2026-11-22T09:30:00.250Z', level: 'warn', event: 'request', method: 'HEAD', status: 304 },
      { time: '2026-11-22T09:30:00.251Z', level: 'error', event: 'upstream_failure', kind: 'auth' },
      { time: '2026-11-22T09:31:00.251Z', level: 'info', event: 'shutting_down' },
    ]);
  });

  it('leaves out undefined fields', () => {
    const { log, lines } = capture();
    log.log('info', 'request', { cache: undefined, status: 404 });
    expect(lines[0]).not.toContain('cache');
  });

  it('replaces a secret wherever it appears in a line, in any field', () => {
    const { log, lines } = capture({ redact: ['sk_live_0123456789'] });
    log.log('error', 'oops', { message: 'rejected sk_live_0123456789 twice: sk_live_0123456789', path: '/x?k=sk_live_0123456789' });
    expect(lines[0]).not.toContain('sk_live_0123456789');
    expect(lines[0]!.match(/\[redacted\]/g)).toHaveLength(3);
  });

  it('redacts a key holding a quote or a backslash, which JSON escapes in the line', () => {
    const key = 'sk_"quoted\\back-0123';
    const { log, lines } = capture({ redact: [key] });
    log.log('error', 'oops', { message: `rejected ${key}` });
    expect(lines[0]).not.toContain(JSON.stringify(key).slice(1, -1));
    expect(lines[0]).not.toContain('quoted');
    expect(JSON.parse(lines[0]!).message).toBe('rejected [redacted]');
  });

  it('redacts the trimmed key too, when the secret was given with surrounding whitespace', () => {
    // A Worker secret pasted with a trailing newline: config trims it, so the trimmed key is what gets used.
    const { log, lines } = capture({ redact: ['  sk_live_0123456789\n'] });
    log.log('error', 'oops', { message: 'Bearer sk_live_0123456789' });
    expect(lines[0]).not.toContain('sk_live_0123456789');
  });

  it('redacts values only, so a key that spells part of the line itself leaves the line intact', () => {
    const key = 'level":"info';
    const { log, lines } = capture({ redact: [key] });
    log.log('info', 'request', { path: `/x/${key}` });
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: 'info', event: 'request', path: '/x/[redacted]' });
  });

  it('redacts a value that is a secret and nothing more, whichever of two secrets it is', () => {
    const { log, lines } = capture({ redact: ['sk_live_0123456789abcdef', 'ts_secret_1'] });
    log.log('error', 'oops', { a: 'sk_live_0123456789abcdef', b: 'ts_secret_1', c: 'ts_secret', d: 'x ts_secret_1' });
    expect(JSON.parse(lines[0]!)).toMatchObject({ a: '[redacted]', b: '[redacted]', c: 'ts_secret', d: 'x [redacted]' });
  });

  it('leaves strings shorter than a key can be alone', () => {
    const { log, lines } = capture({ redact: ['abc'] });
    log.log('info', 'request', { path: '/api/issues/abc' });
    expect(JSON.parse(lines[0]!).path).toBe('/api/issues/abc');
  });
});

describe('createLogger line format', () => {
  /** What the logger has always written: `JSON.stringify` of the whole line as one object. */
  const reference = (time: number, level: string, event: string, fields: Record<string, unknown>) =>
    JSON.stringify({ time: new Date(time).toISOString(), level, event, ...fields });

  const strings = [
    '',
    'plain',
    '/api/issues/jane.doe%40example.com',
    'quote " and backslash \\ and slash /',
    'tab\tnewline\nnul\u0000 esc\u001b del\u007f',
    'naïve café — ☃ 😀',
    'lone \ud800 high and \udc00 low',
    'line\u2028separator\u2029',
    '</script>',
  ];
  const scalars = [0, -0, 1.5, 1e21, 5e-7, -12, Number.NaN, Number.POSITIVE_INFINITY, true, false, null];

  it.each(strings)('writes the string %j exactly as JSON.stringify does', (value) => {
    const { log, lines } = capture();
    log.log('info', value, { value, [value]: value });
    expect(lines[0]).toBe(reference(Date.UTC(2026, 10, 22, 9, 30, 0, 250), 'info', value, { value, [value]: value }));
  });

  it.each(scalars)('writes the value %s exactly as JSON.stringify does', (value) => {
    const { log, lines } = capture();
    log.log('warn', 'e', { value, after: 'x' });
    expect(lines[0]).toBe(reference(Date.UTC(2026, 10, 22, 9, 30, 0, 250), 'warn', 'e', { value, after: 'x' }));
  });

  it('formats the time as toISOString does, across seconds, days and years', () => {
    const times = [0, 999, 1000, 1001, Date.UTC(2026, 11, 31, 23, 59, 59, 999), Date.UTC(2027, 0, 1), 253402300799999, 253402300800000, -1, -62198755200000, 1795478256070.7];
    for (const time of times) {
      const lines: string[] = [];
      createLogger({ write: (line) => lines.push(line), now: () => time }).log('info', 'tick');
      expect(JSON.parse(lines[0]!).time, String(time)).toBe(new Date(time).toISOString());
    }
    // One logger through them all, forth and back: the second it formatted last is not reused for another.
    let time = 0;
    const lines: string[] = [];
    const logger = createLogger({ write: (line) => lines.push(line), now: () => time });
    for (const next of [...times, ...[...times].reverse()]) {
      time = next;
      logger.log('info', 'tick');
      expect(JSON.parse(lines.at(-1)!).time, String(time)).toBe(new Date(time).toISOString());
    }
  });

  it('keeps the order of the fields and leaves out only the undefined ones', () => {
    const { log, lines } = capture();
    log.log('error', 'upstream_failure', { b: 1, a: undefined, c: 'x', d: null });
    expect(lines[0]).toBe('{"time":"2026-11-22T09:30:00.250Z","level":"error","event":"upstream_failure","b":1,"c":"x","d":null}');
  });

  it('types out a field that would stand in for the line\'s own time, level or event (checked by the typecheck)', () => {
    expectTypeOf<{ time: string }>().not.toMatchTypeOf<LogFields>();
    expectTypeOf<{ level: string }>().not.toMatchTypeOf<LogFields>();
    expectTypeOf<{ event: string }>().not.toMatchTypeOf<LogFields>();
    expectTypeOf<{ path: string; status: number; cache: undefined }>().toMatchTypeOf<LogFields>();
  });
});

describe('createLogger access line', () => {
  const KEY = 'sk_test_fake_key_0123456789';
  /** Paths a client can send (after the access log's cut and masking), each of JSON's escapes among them. */
  const PATHS = [
    '/api/issues',
    '/api/issues/spring-planting',
    '/',
    '',
    '/api/issues/"quoted"',
    '/api/issues/back\\slash',
    '/api/issues/\u0000\u0001\u001f\t\n\r\b\f',
    '/api/issues/\u007f\u0080\u00e9\u2028\u2029',
    '/api/issues/\ud83c\udf31',
    '/api/issues/\ud800alone',
    '/api/issues/alone\udfff',
    `/api/issues/${KEY}`,
    `/api/issues/${KEY}/${KEY}"`,
    '/api/issues/%22%5C%00',
    '/api/issues/</script>',
  ];
  const NUMBERS = [0, 0.1, 12.3, 1234.5, 1e21, Number.NaN, Number.POSITIVE_INFINITY, -0, -0.0000012345678901234567];

  it('writes exactly what log("info", "request", …) writes, for every path, number, cache state and request id', () => {
    const { log, lines } = capture({ redact: [KEY] });
    let cases = 0;
    for (const path of PATHS) {
      for (const [index, ms] of NUMBERS.entries()) {
        const cache = [undefined, 'HIT', 'MISS', 'STALE', `x"${KEY}`][index % 5];
        const requestId = [undefined, '6f5a4e32-baf5-4631-9e63-29de015a336b', 'id"with\\escapes', KEY][index % 4];
        const method = ['GET', 'POST', 'M"\\'][index % 3]!;
        const fields = { method, path, status: [200, 304, 404, 499][index % 4]!, ms, cache, requestId };
        log.requestLine!({ method, path, status: fields.status, cache })(ms, requestId);
        log.log('info', 'request', { ...fields });
        const [fast, plain] = lines.splice(0, 2);
        expect(fast, JSON.stringify(fields)).toBe(plain);
        expect(fast).not.toContain(KEY);
        cases += 1;
      }
    }
    expect(cases).toBe(PATHS.length * NUMBERS.length);
  });

  it('writes the same bytes from a deferring writer (the batch written as bytes where the id allows), for every path, number, cache state, id and time', () => {
    const clock = createFakeClock(Date.UTC(2026, 10, 22, 9, 30, 0, 5));
    const chunks: string[] = [];
    // A small batch, so lines also meet its end.
    const writer = createBufferedWriter((chunk) => chunks.push(Buffer.from(chunk).toString('utf8')), { flushIntervalMs: 60_000, maxBufferedBytes: 1024 });
    const log = createLogger({ write: writer.write, defer: writer.defer, now: clock.now, redact: [KEY] });
    const plainLines: string[] = [];
    const plain = createLogger({ write: (line) => plainLines.push(line), now: clock.now, redact: [KEY] });
    const IDS = [undefined, '0123456789abcdef0123456789abcdef', 'A-b_c=9', '', 'id"with\\escapes', 'caf\u00e9', KEY, `x${KEY}x`, 'x'.repeat(255)];
    for (const [p, path] of PATHS.entries()) {
      for (const [index, ms] of NUMBERS.entries()) {
        const cache = [undefined, 'HIT', 'MISS', 'STALE', `x"${KEY}`][index % 5];
        const requestId = IDS[(p + index) % IDS.length];
        const method = ['GET', 'POST', 'M"\\'][index % 3]!;
        const status = [200, 304, 404, 499][index % 4]!;
        log.requestLine!({ method, path, status, cache })(ms, requestId);
        plain.log('info', 'request', { method, path, status, ms, cache, requestId });
        clock.advance([1, 999, 1_000, 37][index % 4]!);
      }
    }
    writer.stop();
    const written = chunks.join('');
    expect(written).toBe(plainLines.map((line) => `${line}\n`).join(''));
    expect(written).not.toContain(KEY);
  });

  it('writes each request of a shared line with its own time, ms and request id', () => {
    const { log, lines, clock } = capture({ redact: [KEY] });
    const line = log.requestLine!({ method: 'GET', path: '/api/issues', status: 200, cache: 'HIT' });
    line(0.4, 'a');
    clock.advance(1_001);
    line(12.3, undefined);
    expect(lines.map((text) => JSON.parse(text))).toEqual([
      { time: '2026-11-22T09:30:00.250Z', level: 'info', event: 'request', method: 'GET', path: '/api/issues', status: 200, ms: 0.4, cache: 'HIT', requestId: 'a' },
      { time: '2026-11-22T09:30:01.251Z', level: 'info', event: 'request', method: 'GET', path: '/api/issues', status: 200, ms: 12.3, cache: 'HIT' },
    ]);
  });
});

describe('createLogger with a deferring writer', () => {
  it('hands an access line to defer as its values, time read at the call, and writes nothing itself', () => {
    const clock = createFakeClock(Date.UTC(2026, 10, 22, 9, 30, 0, 250));
    const written: string[] = [];
    const deferred: { format: RequestLineFormat; time: number; ms: number; requestId: string | undefined }[] = [];
    const log = createLogger({ write: (line) => written.push(line), defer: (format, time, ms, requestId) => deferred.push({ format, time, ms, requestId }), now: clock.now });
    log.requestLine!({ method: 'GET', path: '/api/issues', status: 200, cache: 'HIT' })(0.4, 'a');
    expect(written).toEqual([]);
    expect(deferred).toHaveLength(1);
    const [{ format, time, ms, requestId }] = deferred as [(typeof deferred)[number]];
    expect({ time, ms, requestId }).toEqual({ time: clock.now(), ms: 0.4, requestId: 'a' });
    clock.advance(60_000);
    expect(JSON.parse(format(time, ms, requestId))).toMatchObject({ time: '2026-11-22T09:30:00.250Z', event: 'request', ms: 0.4, requestId: 'a' });
    log.log('info', 'other');
    expect(written).toHaveLength(1);
  });

  it('writes what the immediate logger writes, each request at its own time, in order with the other lines', () => {
    const steps = (log: ReturnType<typeof createLogger>, clock: ReturnType<typeof createFakeClock>) => {
      const line = log.requestLine!({ method: 'GET', path: '/api/issues', status: 200, cache: 'HIT' });
      line(0.4, 'a');
      clock.advance(1_001);
      log.log('warn', 'upstream_slow', { ms: 900 });
      line(12.3, undefined);
      clock.advance(5);
      line(1.5, 'sk_live_0123456789');
      clock.advance(60_000);
    };
    const immediate = capture({ redact: ['sk_live_0123456789'] });
    steps(immediate.log, immediate.clock);

    const clock = createFakeClock(Date.UTC(2026, 10, 22, 9, 30, 0, 250));
    const chunks: string[] = [];
    const writer = createBufferedWriter((chunk) => chunks.push(Buffer.from(chunk).toString('utf8')), { flushIntervalMs: 60_000 });
    const log = createLogger({ write: writer.write, defer: writer.defer, now: clock.now, redact: ['sk_live_0123456789'] });
    steps(log, clock);
    writer.stop();
    expect(chunks.join('')).toBe(immediate.lines.map((text) => `${text}\n`).join(''));
    expect(chunks.join('')).not.toContain('sk_live_0123456789');
  });
});

describe('createBufferedWriter', () => {
  function collect(options: { maxBufferedBytes?: number } = {}) {
    const chunks: string[] = [];
    const writer = createBufferedWriter((chunk) => chunks.push(Buffer.from(chunk).toString('utf8')), { flushIntervalMs: 60_000, ...options });
    return { writer, chunks };
  }

  it('writes nothing until flushed, then every line in order', () => {
    const { writer, chunks } = collect();
    writer.write('a');
    writer.write('b');
    expect(chunks).toEqual([]);
    writer.flush();
    expect(chunks).toEqual(['a\nb\n']);
    writer.flush();
    expect(chunks).toHaveLength(1);
    writer.stop();
  });

  it('flushes by itself before a line would not fit, and never cuts a line', () => {
    const { writer, chunks } = collect({ maxBufferedBytes: 20 });
    writer.write('12345');
    expect(chunks).toEqual([]);
    writer.write('67890');
    expect(chunks).toEqual(['12345\n']);
    writer.stop();
    expect(chunks).toEqual(['12345\n', '67890\n']);
  });

  it('flushes at once when a line fills the batch exactly', () => {
    const { writer, chunks } = collect({ maxBufferedBytes: 4 });
    writer.write('☃'); // 3 bytes and the newline
    expect(chunks).toEqual(['☃\n']);
    writer.stop();
  });

  it('writes a line longer than a batch on its own, after what came before it', () => {
    const { writer, chunks } = collect({ maxBufferedBytes: 16 });
    writer.write('ab');
    writer.write('x'.repeat(40));
    writer.write('cd');
    writer.stop();
    expect(chunks).toEqual(['ab\n', `${'x'.repeat(40)}\n`, 'cd\n']);
  });

  it('keeps every byte of multi-byte characters', () => {
    const { writer, chunks } = collect({ maxBufferedBytes: 64 });
    const lines = ['naïve café — ☃ 😀', '日本語のテキスト', 'plain'];
    for (const line of lines) writer.write(line);
    writer.stop();
    expect(chunks.join('')).toBe(lines.map((line) => `${line}\n`).join(''));
  });

  it('fills each batch as far as whole lines go, every line in order', () => {
    const { writer, chunks } = collect({ maxBufferedBytes: 1024 });
    const lines = Array.from({ length: 200 }, (_, i) => `${i}:${'x'.repeat(i % 7 === 0 ? 120 : 40)}`);
    for (const line of lines) writer.write(line);
    writer.stop();
    expect(chunks.join('')).toBe(lines.map((line) => `${line}\n`).join(''));
    // Each batch but the last went when the next line might not have fitted: its most bytes
    // (3 per character, and the newline; the longest line has 124 characters) were more than was left.
    const sizes = chunks.map((chunk) => Buffer.byteLength(chunk));
    expect(Math.max(...sizes)).toBeLessThanOrEqual(1024);
    for (const size of sizes.slice(0, -1)) expect(size).toBeGreaterThan(1024 - (124 * 3 + 1));
  });

  it('keeps a hundred lines, multi-byte ones among them, until the flush, every byte in order', () => {
    const { writer, chunks } = collect();
    const lines = Array.from({ length: 100 }, (_, i) => (i % 10 === 0 ? `${i} naïve ☃ 😀` : `line ${i}`));
    for (const line of lines) writer.write(line);
    expect(chunks).toEqual([]);
    writer.flush();
    expect(chunks).toEqual([lines.map((line) => `${line}\n`).join('')]);
    writer.stop();
  });

  it('formats a deferred line only when a line is written after it, at the flush, or once maxDeferredLines wait', () => {
    const { writer, chunks } = collect();
    const formatted: string[] = [];
    const format = (time: number, ms: number, requestId: string | undefined) => {
      const line = `${time} ${ms} ${requestId}`;
      formatted.push(line);
      return line;
    };
    writer.defer(format, 1, 0.5, 'a');
    writer.defer(format, 2, 1.5, undefined);
    expect(formatted).toEqual([]);
    writer.write('plain');
    expect(formatted).toEqual(['1 0.5 a', '2 1.5 undefined']);
    writer.defer(format, 3, 2, 'c');
    writer.flush();
    expect(chunks).toEqual(['1 0.5 a\n2 1.5 undefined\nplain\n3 2 c\n']);
    writer.stop();

    const cappedChunks: string[] = [];
    const capped = createBufferedWriter((chunk) => cappedChunks.push(Buffer.from(chunk).toString('utf8')), { flushIntervalMs: 60_000, maxDeferredLines: 3 });
    formatted.length = 0;
    capped.defer(format, 4, 0, 'd');
    capped.defer(format, 5, 0, 'e');
    expect(formatted).toHaveLength(0);
    capped.defer(format, 6, 0, 'f');
    expect(formatted).toEqual(['4 0 d', '5 0 e', '6 0 f']);
    capped.defer(format, 7, 0, 'g');
    capped.stop();
    expect(cappedChunks).toEqual(['4 0 d\n5 0 e\n6 0 f\n7 0 g\n']);
  });

  it('writes deferred lines at the interval, with no other line to bring them out', () => {
    vi.useFakeTimers();
    try {
      const chunks: string[] = [];
      const writer = createBufferedWriter((chunk) => chunks.push(Buffer.from(chunk).toString('utf8')), { flushIntervalMs: 250 });
      writer.defer((time, ms, requestId) => `${time} ${ms} ${requestId}`, 1, 2, 'a');
      vi.advanceTimersByTime(249);
      expect(chunks).toEqual([]);
      vi.advanceTimersByTime(1);
      expect(chunks).toEqual(['1 2 a\n']);
      writer.stop();
    } finally {
      vi.useRealTimers();
    }
  });

  it('keeps the lines after one that fails to format, in order, for the next flush', () => {
    const { writer, chunks } = collect();
    const format = (time: number) => {
      if (time === 2) throw new RangeError('Invalid time value');
      return `line ${time}`;
    };
    for (const time of [1, 2, 3, 4]) writer.defer(format, time, 0, undefined);
    expect(() => writer.flush()).toThrow(RangeError);
    writer.defer(format, 5, 0, undefined);
    writer.flush();
    expect(chunks).toEqual(['line 1\nline 3\nline 4\nline 5\n']);
    writer.stop();
  });

  it('carries deferred lines across full batches and a line longer than a batch, in order', () => {
    const { writer, chunks } = collect({ maxBufferedBytes: 32 });
    const format = (time: number) => (time === 3 ? 'x'.repeat(40) : `line ${time}`);
    for (const time of [1, 2, 3, 4, 5, 6]) writer.defer(format, time, 0, undefined);
    writer.write('plain');
    writer.stop();
    expect(chunks.join('')).toBe(`line 1\nline 2\n${'x'.repeat(40)}\nline 4\nline 5\nline 6\nplain\n`);
    expect(chunks).toContain(`${'x'.repeat(40)}\n`);
  });

  it('hands the sink a batch it does not write into again', () => {
    const kept: Uint8Array[] = [];
    const writer = createBufferedWriter((chunk) => kept.push(chunk), { flushIntervalMs: 60_000, maxBufferedBytes: 64 });
    writer.write('first');
    writer.flush();
    writer.write('second');
    writer.flush();
    expect(kept.map((chunk) => Buffer.from(chunk).toString())).toEqual(['first\n', 'second\n']);
    writer.stop();
  });
});

describe('maskEmail', () => {
  it.each([
    ['jane.doe@Example.COM', 'j***@example.com'],
    ['x@example.org', 'x***@example.org'],
    ['not-an-address', '***'],
    ['@example.org', '***'],
  ])('masks %s as %s', (email, masked) => {
    expect(maskEmail(email)).toBe(masked);
  });
});

describe('maskEmailsInPath', () => {
  it.each([
    ['/api/issues/jane.doe@example.com', '/api/issues/j***@example.com'],
    ['/api/issues/jane.doe%40Example.com', '/api/issues/j***@example.com'],
    ['/api/issues/jane.doe%40example.com/more', '/api/issues/j***@example.com/more'],
    ['/api/issues/%E0%A4%A@x.org', '/api/issues/%***@x.org'],
    ['/api/issues/weekly-notes-12', '/api/issues/weekly-notes-12'],
  ])('logs %s as %s', (path, logged) => {
    expect(maskEmailsInPath(path)).toBe(logged);
  });
});
