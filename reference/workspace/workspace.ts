/**
 * Opening and initialising a workspace: the directory tree and tap-workspace.json
 * (spec: bindings-workspace#layout, #configuration).
 */
import { promises as fsp } from 'node:fs';
import { resolve } from 'node:path';
import { DEFAULT_CONFIG, checkConfig, unsupportedReason, type WorkspaceConfig } from './config.ts';
import { WorkspaceError } from './errors.ts';
import { ensureDir, errnoOf, isMissing, publishNew, readBounded } from './fsio.ts';
import { TASK_DIRS, WorkspacePaths } from './layout.ts';

/** An open workspace: where it is and the settings it fixes. */
export interface Workspace {
  readonly root: string;
  readonly config: Readonly<WorkspaceConfig>;
  readonly paths: WorkspacePaths;
}

const INIT_HINT = 'Run `tapctl workspace init <dir>` to create a workspace.';

/** Every directory of the tree, parents first. */
function treeOf(paths: WorkspacePaths): string[] {
  return [paths.tasks, ...TASK_DIRS.map((d) => paths.dir(d)), paths.history, paths.locks, paths.artifacts, paths.agents, paths.mailboxes];
}

/**
 * Creates the tree and tap-workspace.json, or opens the workspace that is already there. An
 * existing workspace whose settings differ from the ones given is a CONFLICT: its settings are
 * fixed for its life (spec: bindings-workspace#configuration).
 */
export async function initWorkspace(
  dir: string,
  settings: Partial<WorkspaceConfig> = {},
): Promise<{ workspace: Workspace; created: boolean }> {
  const root = resolve(dir);
  const paths = new WorkspacePaths(root);
  const wanted = { ...DEFAULT_CONFIG, ...settings };
  const check = checkConfig(wanted);
  if (!check.ok) throw new WorkspaceError('BAD_CONFIG', `invalid settings: ${check.problems.join('; ')}`, paths.config);
  let existing: Workspace | undefined;
  try {
    existing = await openWorkspace(root);
  } catch (err) {
    if (!(err instanceof WorkspaceError && err.code === 'NOT_A_WORKSPACE')) throw err;
  }
  if (!existing) {
    for (const d of [root, ...treeOf(paths)]) await ensureDir(d);
    try {
      await publishNew(paths.config, JSON.stringify(check.config, null, 2) + '\n');
      return { workspace: { root, config: check.config, paths }, created: true };
    } catch (err) {
      if (errnoOf(err) !== 'EEXIST') throw err;
      existing = await openWorkspace(root);
    }
  }
  const differs = (Object.keys(settings) as (keyof WorkspaceConfig)[]).filter(
    (k) => settings[k] !== undefined && settings[k] !== existing.config[k],
  );
  if (differs.length > 0) {
    throw new WorkspaceError(
      'CONFLICT',
      `${root} is already a workspace with other settings (${differs.map((k) => `${k} is ${JSON.stringify(existing.config[k])}`).join(', ')})`,
      paths.config,
      'A workspace keeps its settings for its whole life; create a new workspace to use other ones.',
    );
  }
  return { workspace: existing, created: false };
}

/** Opens a workspace: reads and checks tap-workspace.json and makes sure the tree exists (spec: bindings-workspace#configuration). */
export async function openWorkspace(dir: string): Promise<Workspace> {
  const root = resolve(dir);
  const paths = new WorkspacePaths(root);
  let read;
  try {
    read = await readBounded(paths.config, 64 * 1024);
  } catch (err) {
    if (errnoOf(err) === 'ENOTDIR') read = null;
    else throw err;
  }
  if (!read) {
    const rootExists = await fsp.stat(root).then(
      (s) => s.isDirectory(),
      (err) => (isMissing(err) ? false : Promise.reject(err)),
    );
    throw new WorkspaceError(
      'NOT_A_WORKSPACE',
      rootExists ? `${root} is not a TAP workspace: it has no tap-workspace.json` : `${root} does not exist`,
      paths.config,
      INIT_HINT,
    );
  }
  let parsed: unknown;
  try {
    if (read.oversized) throw new Error('larger than 64 KiB');
    parsed = JSON.parse(Buffer.from(read.bytes).toString('utf8'));
  } catch (err) {
    throw new WorkspaceError(
      'BAD_CONFIG',
      `tap-workspace.json is not valid JSON: ${(err as Error).message}`,
      paths.config,
      'Fix or restore the file.',
    );
  }
  const check = checkConfig(parsed);
  if (!check.ok) {
    throw new WorkspaceError(
      'BAD_CONFIG',
      `tap-workspace.json is invalid: ${check.problems.join('; ')}`,
      paths.config,
      'Fix or restore the file.',
    );
  }
  const unsupported = unsupportedReason(check.config);
  if (unsupported) {
    throw new WorkspaceError(
      'UNSUPPORTED_WORKSPACE',
      unsupported,
      paths.config,
      "Use a library that speaks the workspace's protocol version.",
    );
  }
  for (const d of treeOf(paths)) await ensureDir(d);
  return { root, config: check.config, paths };
}
