#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { main as runCheck } from './tools/check.js';
import { startNode } from './node.js';

/** `run` gives undefined while it keeps running (a server sets its own code when it stops). */
const COMMANDS: Record<string, { summary: string; run: () => number | undefined | Promise<number | undefined> }> = {
  start: { summary: 'run the service; demo mode without NEWSLETTER_API_KEY', run: () => void startNode(process.env) },
  check: {
    summary: 'probe the configured upstream read-only and report what the site would get (exit 0 ok, 1 broken, 2 bad config)',
    run: () => runCheck({ env: process.env, write: (line) => process.stdout.write(`${line}\n`) }),
  },
};
const DEFAULT_COMMAND = 'start';
const HELP_FLAGS = ['-h', '--help', 'help'];

function usage(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((command) => command.length));
  const lines = Object.entries(COMMANDS).map(
    ([command, { summary }]) => `  ${command.padEnd(width)}  ${summary}${command === DEFAULT_COMMAND ? ' (the default)' : ''}`,
  );
  return `Usage: newsletter-bff [command]

Commands:
${lines.join('\n')}

Options:
  -h, --help     show this help
  -v, --version  print the version

Configured by environment variables (README.md "Configuration").
`;
}

// package.json sits beside dist/ in the repository and in the installed package alike.
const version = () => (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;

async function runCli([first, ...rest]: readonly string[]): Promise<number | undefined> {
  if (first === '-v' || first === '--version') {
    process.stdout.write(`${version()}\n`);
    return 0;
  }
  const name = first ?? DEFAULT_COMMAND;
  const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (HELP_FLAGS.includes(name) || (command && rest.length > 0 && rest.every((arg) => HELP_FLAGS.includes(arg)))) {
    process.stdout.write(usage());
    return 0;
  }
  if (command === undefined || rest.length > 0) {
    const problem = command === undefined ? `unknown command "${name}"` : `unexpected argument "${rest[0]}" after "${name}"`;
    process.stderr.write(`newsletter-bff: ${problem}\n\n${usage()}`);
    return 2;
  }
  return command.run();
}

const code = await runCli(process.argv.slice(2));
if (code !== undefined) process.exitCode = code;
