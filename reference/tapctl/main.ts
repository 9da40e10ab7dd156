/**
 * tapctl: the operator's command-line tool. Registers the built-in commands, runs the one asked
 * for, and exits with its status (0 done, 1 failed, 2 usage error).
 */
import { runCli } from './cli.ts';
import { BUILTIN_COMMANDS } from './commands.ts';
import { registerCommand } from './registry.ts';

for (const command of BUILTIN_COMMANDS) registerCommand(command);

const controller = new AbortController();
let signalled = false;
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.on(sig, () => {
    // A second signal means "now".
    if (signalled) process.exit(130);
    signalled = true;
    controller.abort();
  });
}

const code = await runCli(process.argv.slice(2), {
  io: { out: (t) => void process.stdout.write(t), err: (t) => void process.stderr.write(t) },
  signal: controller.signal,
});
process.exitCode = code;
