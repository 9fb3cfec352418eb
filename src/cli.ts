#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { runCli, type CliCommand } from './tools/commands.js';
import { main as runCheck } from './tools/check.js';
import { startNode } from './node.js';

const commands: Record<string, CliCommand> = {
  start: {
    summary: 'run the service; demo mode without NEWSLETTER_API_KEY',
    run: ({ env }) => void startNode(env),
  },
  check: {
    summary: 'probe the configured upstream read-only and report what the site would get (exit 0 ok, 1 broken, 2 bad config)',
    run: ({ env, stdout }) => runCheck({ env, write: (line) => stdout(`${line}\n`) }),
  },
};

// package.json sits beside dist/ in the repository and in the installed package alike.
const version = () => (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;

const code = await runCli(
  process.argv.slice(2),
  { name: 'newsletter-bff', version, commands, defaultCommand: 'start' },
  { env: process.env, stdout: (text) => process.stdout.write(text), stderr: (text) => process.stderr.write(text) },
);
if (code !== undefined) process.exitCode = code;
