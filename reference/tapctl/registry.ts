/**
 * The tapctl command registry: each top-level command (`workspace`, and later others such as
 * `gen-types`) is one entry with a name, a one-line summary, its help text and a `run`.
 */

/** Where a command writes: stdout for results, stderr for messages to people. */
export interface Io {
  out(text: string): void;
  err(text: string): void;
}

/** What a command gets besides its arguments. */
export interface CommandContext {
  io: Io;
  /** Aborted on SIGINT/SIGTERM; long-running commands (tail, reap --watch) stop on it. */
  signal: AbortSignal;
  /** Print stack traces for unexpected errors. */
  debug: boolean;
  /** The program name as invoked, for messages ("tapctl"). */
  program: string;
}

/** One command. `run` resolves with the exit status; it throws CliError for failures people should read. */
export interface Command {
  name: string;
  summary: string;
  /** The full help text, shown by `--help`. */
  help: string;
  run(args: string[], ctx: CommandContext): Promise<number>;
}

const registry = new Map<string, Command>();

/** Adds a command; a second command with the same name is a programming error. */
export function registerCommand(command: Command): void {
  if (registry.has(command.name)) throw new Error(`tapctl: command ${command.name} is registered twice`);
  registry.set(command.name, command);
}

/** The command of that name, if registered. */
export function findCommand(name: string): Command | undefined {
  return registry.get(name);
}

/** Every registered command, by name. */
export function listCommands(): Command[] {
  return [...registry.values()].sort((a, b) => a.name.localeCompare(b.name));
}

/**
 * A command made of subcommands (`tapctl workspace init …`): dispatches on the first argument
 * and prints the group's help for `--help` or a missing subcommand.
 */
export function commandGroup(name: string, summary: string, subcommands: Command[]): Command {
  const byName = new Map(subcommands.map((c) => [c.name, c]));
  const width = Math.max(...subcommands.map((c) => c.name.length));
  const help = [
    `Usage: tapctl ${name} <command> [options]`,
    '',
    summary,
    '',
    'Commands:',
    ...subcommands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    `Run tapctl ${name} <command> --help for the options of a command.`,
  ].join('\n');
  return {
    name,
    summary,
    help,
    async run(args, ctx) {
      const [sub, ...rest] = args;
      if (sub === undefined || sub === '--help' || sub === '-h' || sub === 'help') {
        ctx.io.out(help + '\n');
        return sub === undefined ? 2 : 0;
      }
      const command = byName.get(sub);
      if (!command) {
        const e = new CliError(`unknown command "${name} ${sub}"`, {
          usage: true,
          hint: `The ${name} commands are: ${[...byName.keys()].join(', ')}.`,
        });
        e.helpCommand = name;
        throw e;
      }
      if (rest.includes('--help') || rest.includes('-h')) {
        ctx.io.out(command.help + '\n');
        return 0;
      }
      try {
        return await command.run(rest, ctx);
      } catch (err) {
        if (err instanceof CliError && err.usage && !err.helpCommand) err.helpCommand = `${name} ${sub}`;
        throw err;
      }
    },
  };
}

/** A failure for people: what was wrong (`message`), where (`where`), what to do next (`hint`). */
export class CliError extends Error {
  override name = 'CliError';
  readonly where?: string;
  readonly hint?: string;
  /** A usage error exits 2 and points at --help; any other exits 1. */
  readonly usage: boolean;
  /** A stable code for scripts (`--json` prints it). */
  readonly code: string;
  /** The command whose --help a usage error points at, e.g. "workspace show". */
  helpCommand?: string;
  constructor(message: string, o: { where?: string; hint?: string; usage?: boolean; code?: string } = {}) {
    super(message);
    this.where = o.where;
    this.hint = o.hint;
    this.usage = o.usage ?? false;
    this.code = o.code ?? (this.usage ? 'USAGE' : 'FAILED');
  }
}
