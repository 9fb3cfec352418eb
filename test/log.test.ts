import { describe, expect, expectTypeOf, it, vi } from 'vitest';
import { createBufferedWriter, createLogger, maskEmail, maskEmailsInPath, type LogFields } from '../src/core/log.js';
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

  it('keeps the order of the fields and leaves out only the undefined ones', () => {
    const { log, lines } = capture();
    log.log('error', 'upstream_failure', { b: 1, a: undefined, c: 'x', d: null });
    expect(lines[0]).toBe('{"time":"2026-11-22T09:30:00.250Z","level":"error","event":"upstream_failure","b":1,"c":"x","d":null}');
  });

  it("types out a field that would stand in for the line's own time, level or event (checked by the typecheck)", () => {
    expectTypeOf<{ time: string }>().not.toMatchTypeOf<LogFields>();
    expectTypeOf<{ level: string }>().not.toMatchTypeOf<LogFields>();
    expectTypeOf<{ event: string }>().not.toMatchTypeOf<LogFields>();
    expectTypeOf<{ path: string; status: number; cache: undefined }>().toMatchTypeOf<LogFields>();
  });
});

describe('createBufferedWriter', () => {
  function collect(options: { maxBufferedBytes?: number } = {}) {
    const chunks: string[] = [];
    const writer = createBufferedWriter((chunk) => chunks.push(Buffer.from(chunk).toString('utf8')), {
      flushIntervalMs: 60_000,
      ...options,
    });
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

  it('writes waiting lines at the interval, with no other line to bring them out', () => {
    vi.useFakeTimers();
    try {
      const chunks: string[] = [];
      const writer = createBufferedWriter((chunk) => chunks.push(Buffer.from(chunk).toString('utf8')), { flushIntervalMs: 250 });
      writer.write('a');
      vi.advanceTimersByTime(249);
      expect(chunks).toEqual([]);
      vi.advanceTimersByTime(1);
      expect(chunks).toEqual(['a\n']);
      writer.stop();
    } finally {
      vi.useRealTimers();
    }
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
