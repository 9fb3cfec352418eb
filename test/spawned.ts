import type { ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';

/** Node-only helpers for the suites that spawn the built command (test/helpers.ts stays runtime-neutral). */

/** A port free on 127.0.0.1 a moment ago, for a child process to listen on. */
export function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

/** Resolves with everything the child printed once its stdout says `text`; gives up after `ms`. */
export function waitForOutput(child: ChildProcess, text: string, ms: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let stdout = '';
    const timer = setTimeout(() => reject(new Error(`no "${text}" within ${ms} ms: ${stdout}`)), ms);
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      if (stdout.includes(text)) {
        clearTimeout(timer);
        resolve(stdout);
      }
    });
  });
}
