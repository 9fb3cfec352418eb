import { describe, expect, it } from 'vitest';
import { ApiError } from '../src/core/http/errors.js';

describe('ApiError', () => {
  it('captures no stack for a client error, and keeps one for a server error', () => {
    const notFound = new ApiError('NOT_FOUND');
    expect(notFound.status).toBe(404);
    // The stack is the first line alone: no "    at …" frames.
    expect(notFound.stack).toBe('ApiError: Not found.');
    const upstream = new ApiError('UPSTREAM_ERROR', { cause: new Error('boom') });
    expect(upstream.status).toBe(502);
    expect(upstream.stack).toMatch(/\n\s+at /);
  });

  it('leaves Error.stackTraceLimit as it found it, also when it was changed', () => {
    const before = Error.stackTraceLimit;
    try {
      Error.stackTraceLimit = 3;
      new ApiError('VALIDATION_ERROR');
      expect(Error.stackTraceLimit).toBe(3);
      expect(new Error('after').stack).toMatch(/\n\s+at /);
    } finally {
      Error.stackTraceLimit = before;
    }
  });
});
