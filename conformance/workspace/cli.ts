/**
 * The command line of `tap-conform --workspace`: the workspace options are taken out, the rest
 * is parsed as every run's (conformance/options.ts), and the run is certified over the
 * workspace binding. Exit codes as tap-conform's: 0 certified, 1 a case failed, 2 usage, 3 the
 * harness could not run.
 */
import { SUPPORTED_VERSIONS } from '../../reference/core/catalogue.ts';
import { parseCli } from '../options.ts';
import { USAGE } from '../usage.ts';
import { CannotRun } from '../target.ts';
import { WORKSPACE_USAGE, splitWorkspaceArgs } from './options.ts';
import { WorkspaceUsage, certifyWorkspace, workspaceSelection } from './run.ts';
import { WorkspaceDirInUse } from './workspace-run.ts';

export { wantsWorkspace } from './options.ts';

/** Runs tap-conform over the workspace binding; resolves with the exit code. */
export async function workspaceMain(
  argv: readonly string[],
  out: NodeJS.WriteStream = process.stdout,
  err: NodeJS.WriteStream = process.stderr,
): Promise<number> {
  const split = splitWorkspaceArgs(argv);
  const usage = (message: string) => {
    err.write(`tap-conform: ${message} (exit 2; see tap-conform --help)\n`);
    return 2;
  };
  if (!split.ok) return usage(split.error);
  const parsed = parseCli(split.rest);
  if (!parsed.ok) return usage(parsed.error);
  const cfg = parsed.config;
  if (cfg.help) {
    out.write(`${USAGE}\n\n${WORKSPACE_USAGE}\n`);
    return 0;
  }
  if (cfg.version) {
    const { toolVersion } = await import('../report/finish.ts');
    out.write(`tap-conform ${toolVersion()} (TAP ${SUPPORTED_VERSIONS.join(' and ')})\n`);
    return 0;
  }
  try {
    if (cfg.list) {
      const cases = workspaceSelection(cfg, split.options);
      const w = Math.max(...cases.map((c) => c.id.length), 2);
      const sw = Math.max(...cases.map((c) => c.spec.length), 4);
      const rows = cases.map((c) => `${c.id.padEnd(w)}  ${c.level.padEnd(6)}  ${c.profile.padEnd(16)}  ${c.spec.padEnd(sw)}  ${c.title}`);
      out.write(
        [`${'id'.padEnd(w)}  level   profile           ${'spec'.padEnd(sw)}  title`, ...rows, `${cases.length} cases`].join('\n') + '\n',
      );
      return 0;
    }
    return await certifyWorkspace(cfg, split.options, out, err);
  } catch (e) {
    if (e instanceof WorkspaceUsage || e instanceof WorkspaceDirInUse) return usage(e.message);
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
