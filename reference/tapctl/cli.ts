/**
 * tapctl's dispatcher: global options, the registry lookup, and one way of reporting errors —
 * what was wrong, where, what to do next; a stack trace only with --debug.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { MissingPeerError } from '../peers.ts';
import { WorkspaceError } from '../workspace/errors.ts';
import { CliError, findCommand, listCommands, type CommandContext, type Io } from './registry.ts';

/** The top-level help, listing every registered command. */
export function mainHelp(): string {
  const commands = listCommands();
  const width = Math.max(8, ...commands.map((c) => c.name.length));
  return [
    'Usage: tapctl <command> [options]',
    '',
    'Operates TAP deployments: workspaces shared by file-based agents, and more.',
    '',
    'Commands:',
    ...commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    'Options:',
    '  --debug     print stack traces of unexpected errors',
    '  -h, --help  show this help',
    '',
    'Run tapctl <command> --help for the commands and options of a command.',
  ].join('\n');
}

/** Runs tapctl with `argv` (without node and script); resolves with the exit status. */
export async function runCli(argv: string[], o: { io: Io; signal?: AbortSignal; program?: string }): Promise<number> {
  const debug = argv.includes('--debug');
  const args = argv.filter((a) => a !== '--debug');
  const json = args.includes('--json');
  const ctx: CommandContext = { io: o.io, signal: o.signal ?? new AbortController().signal, debug, program: o.program ?? 'tapctl' };
  const [name, ...rest] = args;
  try {
    if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
      o.io.out(mainHelp() + '\n');
      return name === undefined ? 2 : 0;
    }
    const command = findCommand(name);
    if (!command) {
      throw new CliError(`unknown command "${name}"`, {
        usage: true,
        hint: `The commands are: ${listCommands()
          .map((c) => c.name)
          .join(', ')}.`,
      });
    }
    return await command.run(rest, ctx);
  } catch (err) {
    return report(err, ctx, json, name);
  }
}

/** Prints an error for people on stderr (and as JSON on stdout with --json); returns the exit status. */
function report(err: unknown, ctx: CommandContext, json: boolean, command: string | undefined): number {
  const e = asCliError(err);
  const lines = [`${ctx.program}: ${e.message}`];
  if (e.where) lines.push(`  where: ${e.where}`);
  if (e.hint) lines.push(`  ${e.hint}`);
  const helpOf = e.helpCommand ?? (command && findCommand(command) ? command : undefined);
  if (e.usage) lines.push(`  Run ${ctx.program}${helpOf ? ` ${helpOf}` : ''} --help for usage.`);
  if (!(err instanceof CliError) && !(err instanceof WorkspaceError) && !(err instanceof MissingPeerError)) {
    lines.push(ctx.debug && err instanceof Error && err.stack ? err.stack : '  (run with --debug to see the stack trace)');
  }
  ctx.io.err(lines.join('\n') + '\n');
  if (json)
    ctx.io.out(
      JSON.stringify(
        { error: { code: e.code, message: e.message, ...(e.where ? { where: e.where } : {}), ...(e.hint ? { hint: e.hint } : {}) } },
        null,
        2,
      ) + '\n',
    );
  return e.usage ? 2 : 1;
}

/** Any thrown value as a CliError. */
export function asCliError(err: unknown): CliError {
  if (err instanceof CliError) return err;
  if (err instanceof WorkspaceError) return new CliError(err.message, { where: err.path, hint: err.hint, code: err.code });
  if (err instanceof MissingPeerError) return new CliError(err.message, { code: 'MISSING_PEER' });
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS')) return new CliError((err as Error).message, { usage: true });
  if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) {
    const path = (err as { path?: unknown }).path;
    return new CliError(`${(err as Error).message}`, { where: typeof path === 'string' ? path : undefined, code });
  }
  return new CliError(`internal error: ${err instanceof Error ? err.message : String(err)}`, { code: 'INTERNAL' });
}

/** node:util parseArgs with strict options; its errors become usage errors. */
export function parseOptions<T extends NonNullable<ParseArgsConfig['options']>>(
  args: string[],
  options: T,
): { values: { [K in keyof T]?: T[K] extends { type: 'boolean' } ? boolean : string }; positionals: string[] } {
  try {
    const { values, positionals } = parseArgs({ args, options, allowPositionals: true, strict: true });
    return { values: values as never, positionals };
  } catch (err) {
    throw new CliError((err as Error).message, { usage: true });
  }
}

/** A non-negative integer option, or a usage error naming it. */
export function intOption(value: string | undefined, name: string, min = 0): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < min)
    throw new CliError(`--${name} must be an integer of at least ${min}, got "${value}"`, { usage: true });
  return n;
}

/** Exactly `names.length` positional arguments, or a usage error saying which is missing. */
export function positionals(given: string[], names: string[]): string[] {
  if (given.length < names.length)
    throw new CliError(
      `missing ${names
        .slice(given.length)
        .map((n) => `<${n}>`)
        .join(' and ')}`,
      { usage: true },
    );
  if (given.length > names.length) throw new CliError(`unexpected argument "${given[names.length]}"`, { usage: true });
  return given;
}
