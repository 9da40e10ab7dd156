/** tapctl workspace init: creates a workspace, or confirms the one that is there. */
import { initWorkspace, type ClaimMode, type WorkspaceConfig } from '../../workspace/index.ts';
import { CliError, type Command } from '../registry.ts';
import { intOption, parseOptions, positionals } from '../cli.ts';
import { printJson } from './format.ts';

export const initCommand: Command = {
  name: 'init',
  summary: 'create a workspace (tap-workspace.json and its directories)',
  help: `Usage: tapctl workspace init <dir> [options]

Creates the workspace tree and tap-workspace.json in <dir> (made if missing). Its settings are
fixed for the life of the workspace; running init again on a workspace changes nothing.

Options:
  --claim-mode MODE     rename (default) or lock, for file systems whose rename is not
                        atomic, such as some NFS mounts
  --lease-ms N          how long a claim lives without renewal (default 30000)
  --max-attempts N      claims of a phase before the task becomes a dead letter (default 3)
  --history-limit N     history entries a record keeps before compaction (default 100)
  --json                print the result as JSON
`,
  async run(args, ctx) {
    const { values, positionals: given } = parseOptions(args, {
      'claim-mode': { type: 'string' },
      'lease-ms': { type: 'string' },
      'max-attempts': { type: 'string' },
      'history-limit': { type: 'string' },
      json: { type: 'boolean' },
    });
    const [dir] = positionals(given, ['dir']);
    const mode = values['claim-mode'];
    if (mode !== undefined && mode !== 'rename' && mode !== 'lock') {
      throw new CliError(`--claim-mode must be "rename" or "lock", got "${mode}"`, { usage: true });
    }
    const settings: Partial<WorkspaceConfig> = {};
    if (mode) settings.claim_mode = mode as ClaimMode;
    const lease = intOption(values['lease-ms'], 'lease-ms', 100);
    const attempts = intOption(values['max-attempts'], 'max-attempts', 1);
    const limit = intOption(values['history-limit'], 'history-limit', 2);
    if (lease !== undefined) settings.lease_ms = lease;
    if (attempts !== undefined) settings.max_attempts = attempts;
    if (limit !== undefined) settings.history_limit = limit;
    const { workspace, created } = await initWorkspace(dir!, settings);
    if (values.json) {
      printJson(ctx.io, { workspace: workspace.root, created, config: workspace.config });
      return 0;
    }
    const c = workspace.config;
    const what = `${c.protocol}, claim mode ${c.claim_mode}, lease ${c.lease_ms} ms, max attempts ${c.max_attempts}, history limit ${c.history_limit}`;
    ctx.io.out(
      created
        ? `Created workspace ${workspace.root} (${what}).\n`
        : `${workspace.root} is already a workspace (${what}); nothing changed.\n`,
    );
    return 0;
  },
};
