export type CliIo = { env: NodeJS.ProcessEnv; stdout: (text: string) => void; stderr: (text: string) => void };

/** `run` gives undefined while it keeps running (a server sets its own code when it stops). */
export type CliCommand = { summary: string; run: (io: CliIo) => number | undefined | Promise<number | undefined> };

export type CliOptions = { name: string; version: () => string; commands: Readonly<Record<string, CliCommand>>; defaultCommand: string };

const HELP_FLAGS = ['-h', '--help', 'help'];

function usage({ name, commands, defaultCommand }: CliOptions): string {
  const width = Math.max(...Object.keys(commands).map((command) => command.length));
  const lines = Object.entries(commands).map(
    ([command, { summary }]) => `  ${command.padEnd(width)}  ${summary}${command === defaultCommand ? ' (the default)' : ''}`,
  );
  return `Usage: ${name} [command]

Commands:
${lines.join('\n')}

Options:
  -h, --help     show this help
  -v, --version  print the version

Configured by environment variables (README.md "Configuration").
`;
}

export async function runCli(args: readonly string[], options: CliOptions, io: CliIo): Promise<number | undefined> {
  const [first, ...rest] = args;
  if (first === '-v' || first === '--version') {
    io.stdout(`${options.version()}\n`);
    return 0;
  }
  const name = first ?? options.defaultCommand;
  const command = Object.hasOwn(options.commands, name) ? options.commands[name] : undefined;
  if (HELP_FLAGS.includes(name) || (command && rest.length > 0 && rest.every((arg) => HELP_FLAGS.includes(arg)))) {
    io.stdout(usage(options));
    return 0;
  }
  if (command === undefined || rest.length > 0) {
    const problem = command === undefined ? `unknown command "${name}"` : `unexpected argument "${rest[0]}" after "${name}"`;
    io.stderr(`${options.name}: ${problem}\n\n${usage(options)}`);
    return 2;
  }
  return command.run(io);
}
