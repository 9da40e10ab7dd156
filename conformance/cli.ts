/**
 * tap-conform: certifies a TAP agent over stdio or WebSocket. Exit codes: 0 every required case
 * passed, 1 the agent failed a case, 2 usage error, 3 the harness could not run.
 */
import { SUPPORTED_VERSIONS } from '../reference/core/catalogue.ts';
import { packageVersion } from '../reference/package.ts';
import { type Config, parseCli } from './options.ts';
import { USAGE } from './usage.ts';
import { WORKSPACE_USAGE, wantsWorkspace } from './workspace/options.ts';

/** Runs the program; resolves with the exit code. Output goes to the given streams. */
export async function main(
  argv: readonly string[],
  out: NodeJS.WriteStream = process.stdout,
  err: NodeJS.WriteStream = process.stderr,
): Promise<number> {
  // The workspace binding has options of its own (conformance/workspace).
  if (wantsWorkspace(argv)) return (await import('./workspace/cli.ts')).workspaceMain(argv, out, err);
  const parsed = parseCli(argv);
  if (!parsed.ok) {
    err.write(`tap-conform: ${parsed.error} (exit 2; see tap-conform --help)\n`);
    return 2;
  }
  const cfg = parsed.config;
  if (cfg.help) {
    out.write(`${USAGE}\n\n${WORKSPACE_USAGE}\n`);
    return 0;
  }
  if (cfg.version) {
    out.write(`tap-conform ${packageVersion()} (TAP ${SUPPORTED_VERSIONS.join(' and ')})\n`);
    return 0;
  }
  // The cases, the runner and the report writers load only for a run (fast --help and --version).
  const run = await import('./run.ts');
  const { CannotRun } = await import('./target.ts');
  try {
    if (cfg.list) {
      out.write(`${run.listCases(cfg)}\n`);
      return 0;
    }
    return await certify(run, cfg, out, err);
  } catch (e) {
    if (e instanceof run.Exit) {
      err.write(`tap-conform: ${e.message} (exit ${e.code})\n`);
      return e.code;
    }
    if (e instanceof CannotRun) {
      err.write(`tap-conform: ${e.message} (exit 3)\n`);
      return 3;
    }
    err.write(
      `tap-conform: internal error: ${cfg.debug ? ((e as Error).stack ?? String(e)) : (e as Error).message} (exit 3; rerun with --debug and report it)\n`,
    );
    return 3;
  }
}

async function certify(run: typeof import('./run.ts'), cfg: Config, out: NodeJS.WriteStream, err: NodeJS.WriteStream): Promise<number> {
  const { painter, progressLine } = await import('./report/terminal.ts');
  const paint = painter(cfg.color && err.isTTY === true);
  // A line logged while the live progress line shows replaces it; the next update draws it again.
  let live: ReturnType<typeof progressLine> | undefined;
  const { report, baseline } = await run.runConfigured(cfg, {
    onProgress: () => (live = progressLine(err, paint)),
    log: (line) => {
      live?.clear();
      err.write(`${line}\n`);
    },
  });
  const { finishRun } = await import('./report/finish.ts');
  return finishRun(report, { cfg, baseline, out, err, usage: (m) => new run.Exit(2, m) });
}

/** Runs tap-conform as a program: argv from the process, exit status set when it ends. */
export async function runProgram(): Promise<void> {
  // A reader that goes away (tap-conform --list | head) is not an error of ours.
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
      throw err;
    });
  }
  const code = await main(process.argv.slice(2));
  process.exitCode = code;
  // Children and sockets are closed by now; do not wait for stray timers.
  setTimeout(() => process.exit(code), 50).unref();
}

if (process.argv[1] !== undefined && /conformance[\\/]cli\.[jt]s$/.test(process.argv[1])) await runProgram();
