import { describe, expect, it } from 'vitest';
import { createBufferedWriter, createLogger, maskEmail, maskEmailsInPath } from '../src/log.js';
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

  it('leaves strings shorter than a key can be alone', () => {
    const { log, lines } = capture({ redact: ['abc'] });
    log.log('info', 'request', { path: '/api/issues/abc' });
    expect(JSON.parse(lines[0]!).path).toBe('/api/issues/abc');
  });
});

describe('createBufferedWriter', () => {
  it('writes nothing until flushed, then every line in order', () => {
    const chunks: string[] = [];
    const writer = createBufferedWriter((chunk) => chunks.push(chunk), { flushIntervalMs: 60_000 });
    writer.write('a');
    writer.write('b');
    expect(chunks).toEqual([]);
    writer.flush();
    expect(chunks).toEqual(['a\nb\n']);
    writer.stop();
  });

  it('flushes by itself when the buffer is full', () => {
    const chunks: string[] = [];
    const writer = createBufferedWriter((chunk) => chunks.push(chunk), { flushIntervalMs: 60_000, maxBufferedBytes: 10 });
    writer.write('12345');
    expect(chunks).toEqual([]);
    writer.write('67890');
    expect(chunks).toEqual(['12345\n67890\n']);
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
