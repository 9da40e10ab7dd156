/** The commands tapctl ships with; a new top-level command is one more entry here. */
import type { Command } from './registry.ts';
import { workspaceCommand } from './workspace/index.ts';
import { genTypesCommand } from './gen-types/command.ts';
import { meshCommand } from './mesh/index.ts';
import { natsCommand } from './nats/index.ts';
import { siteCommand } from './site.ts';
import { auditCommand } from './audit.ts';
import { healthCommand, metricsCommand } from './monitoring.ts';

export const BUILTIN_COMMANDS: Command[] = [
  workspaceCommand,
  genTypesCommand,
  natsCommand,
  meshCommand,
  siteCommand,
  healthCommand,
  metricsCommand,
  auditCommand,
];
