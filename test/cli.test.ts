import { execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { freeLoopbackPort, waitForOutput } from './spawned.js';

// The built command as `npm start` and the installed `newsletter-bff` run it (test/build-dist.ts builds it).
const cli = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };

/** Runs the CLI to its end with a clean environment (no key of the caller's can leak in). */
function run(args: string[], env: Record<string, string> = {}) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = execFile(
      process.execPath,
      [cli, ...args],
      { env: { PATH: process.env.PATH ?? '', ...env }, timeout: 15_000 },
      (_error, stdout, stderr) => resolve({ code: child.exitCode, stdout, stderr }),
    );
  });
}

describe('newsletter-bff command', () => {
  it.each([['--help'], ['-h'], ['help'], ['start', '--help']].map((args) => ({ args, label: args.join(' ') })))(
    'prints the usage with `$label` and exits 0',
    async ({ args }) => {
      const result = await run(args);
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(/^Usage: newsletter-bff \[command\]$/m);
      expect(result.stdout).toMatch(/^ {2}start {2}run the service.*\(the default\)$/m);
      expect(result.stderr).toBe('');
    },
  );

  it.each([['--version'], ['-v']])('prints the package version with %s and exits 0', async (flag) => {
    expect(await run([flag])).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' });
  });

  it('answers an unknown subcommand with the usage on stderr and exit code 2', async () => {
    const result = await run(['serve']);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/^newsletter-bff: unknown command "serve"\n\nUsage: newsletter-bff/);
  });

  it('answers an unexpected argument after a subcommand with exit code 2', async () => {
    const result = await run(['start', '--port=80']);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^newsletter-bff: unexpected argument "--port=80" after "start"\n/);
  });

  it('exits 2 with one line per configuration error, for `start` and for no subcommand alike', async () => {
    for (const args of [['start'], []]) {
      const result = await run(args, { PORT: 'eighty', CACHE_TTL_SECONDS: '-1' });
      expect(result.code).toBe(2);
      expect(result.stderr.split('\n').filter((line) => line.startsWith('config error: '))).toHaveLength(2);
    }
  });

  it('starts the service in demo mode with `start` and stops with exit code 0 on SIGTERM', async () => {
    const port = await freeLoopbackPort();
    const child = spawn(process.execPath, [cli, 'start'], { env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: String(port) } });
    try {
      const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
      await waitForOutput(child, 'listening on', 15_000);
      const response = await fetch(`http://127.0.0.1:${port}/api/categories`);
      expect(response.status).toBe(200);
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });

  it('runs `check` against the demo upstream in demo mode and exits 0', async () => {
    const result = await run(['check']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/demo/i);
    expect(result.stdout).toMatch(/^check: everything the site needs works/m);
  });

  it('exits 2 from `check` with one line per configuration error and calls nothing', async () => {
    const result = await run(['check'], { PORT: 'eighty', UPSTREAM_TIMEOUT_MS: 'soon' });
    expect(result.code).toBe(2);
    expect(result.stdout.split('\n').filter((line) => /PORT|UPSTREAM_TIMEOUT_MS/.test(line))).toHaveLength(2);
  });

  it('exits 1 from `check` when the upstream cannot be reached, without printing the key', async () => {
    const port = await freeLoopbackPort();
    const key = 'cli-check-fake-key-5d1e';
    const result = await run(['check'], {
      NEWSLETTER_API_KEY: key,
      NEWSLETTER_API_BASE_URL: `http://127.0.0.1:${port}/v1`,
      UPSTREAM_TIMEOUT_MS: '500',
    });
    expect(result.code).toBe(1);
    expect(result.stdout + result.stderr).not.toContain(key);
  });
});
