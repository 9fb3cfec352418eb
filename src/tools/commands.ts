/* The command line: one table of subcommands, `--help`, `--version`, exit 2 on a usage error. */

export interface CliIo {
  env: NodeJS.ProcessEnv;
  stdout: (text: string) => void;
  stderr: (text: string) => void;
}

export interface CliCommand {
  summary: string;
  /** Undefined while it keeps running (a server sets its own code when it stops). */
  run: (io: CliIo) => number | undefined | Promise<number | undefined>;
}

export interface CliOptions {
  name: string;
  version: () => string;
  commands: Readonly<Record<string, CliCommand>>;
  defaultCommand: string;
}

const EXIT_USAGE = 2;

const HELP_FLAGS = new Set(['-h', '--help', 'help']);
const VERSION_FLAGS = new Set(['-v', '--version']);

export function usage(options: CliOptions): string {
  const width = Math.max(...Object.keys(options.commands).map((name) => name.length));
  const commands = Object.entries(options.commands).map(
    ([name, command]) => `  ${name.padEnd(width)}  ${command.summary}${name === options.defaultCommand ? ' (the default)' : ''}`,
  );
  return [
    `Usage: ${options.name} [command]`,
    '',
    'Commands:',
    ...commands,
    '',
    'Options:',
    '  -h, --help     show this help',
    '  -v, --version  print the version',
    '',
    'Configured by environment variables (README.md "Configuration").',
    '',
  ].join('\n');
}

export async function runCli(args: readonly string[], options: CliOptions, io: CliIo): Promise<number | undefined> {
  const [first, ...rest] = args;
  if (first !== undefined && HELP_FLAGS.has(first)) {
    io.stdout(usage(options));
    return 0;
  }
  if (first !== undefined && VERSION_FLAGS.has(first)) {
    io.stdout(`${options.version()}\n`);
    return 0;
  }
  const name = first ?? options.defaultCommand;
  const command = Object.hasOwn(options.commands, name) ? options.commands[name] : undefined;
  if (command === undefined) return usageError(`unknown command "${name}"`, options, io);
  if (rest.length > 0 && rest.every((arg) => HELP_FLAGS.has(arg))) {
    io.stdout(usage(options));
    return 0;
  }
  if (rest.length > 0) return usageError(`unexpected argument "${rest[0]}" after "${name}"`, options, io);
  return command.run(io);
}

function usageError(problem: string, options: CliOptions, io: CliIo): number {
  io.stderr(`${options.name}: ${problem}\n\n${usage(options)}`);
  return EXIT_USAGE;
}
