/** tapctl run in this process as tests drive it: the built-in commands registered, its exit status and what it wrote. */
import { runCli } from './cli.ts';
import { BUILTIN_COMMANDS } from './commands.ts';
import { findCommand, registerCommand } from './registry.ts';

/** Runs `tapctl ...argv` in this process; resolves with its exit status, stdout and stderr, and stdout read as JSON. */
export async function tapctl(...argv: string[]): Promise<{ code: number; out: string; err: string; json: () => any }> {
  for (const c of BUILTIN_COMMANDS) if (!findCommand(c.name)) registerCommand(c);
  let out = '';
  let err = '';
  const code = await runCli(argv, { io: { out: (t) => void (out += t), err: (t) => void (err += t) } });
  return { code, out, err, json: () => JSON.parse(out) };
}
