/** `tapctl mesh …`: looking into a mesh: the agents in its registry, who offers what, and the tasks and traces that cross it (spec: registry, mesh). */
import { commandGroup } from '../registry.ts';
import { agentsCommand } from './agents.ts';
import { discoverCommand } from './discover.ts';
import { tasksCommand } from './tasks.ts';
import { traceCommand } from './trace.ts';

export const meshCommand = commandGroup(
  'mesh',
  'Look into a mesh: the agents in its registry, who offers what, and the tasks and traces that cross it.',
  [agentsCommand, discoverCommand, tasksCommand, traceCommand],
);
