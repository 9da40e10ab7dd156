/** `tapctl workspace …`: operating a TAP workspace (spec: bindings-workspace). */
import { commandGroup } from '../registry.ts';
import { decideCommand } from './decide.ts';
import { initCommand } from './init.ts';
import { reapCommand } from './reap.ts';
import { showCommand } from './show.ts';
import { statusCommand } from './status.ts';
import { submitCommand } from './submit.ts';
import { tailCommand } from './tail.ts';

export const workspaceCommand = commandGroup(
  'workspace',
  'Operate a TAP workspace: a shared folder where file-based agents hand tasks on.',
  [initCommand, submitCommand, statusCommand, showCommand, decideCommand, tailCommand, reapCommand],
);
