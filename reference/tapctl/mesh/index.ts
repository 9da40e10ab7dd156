/** `tapctl mesh …`: the agents of a mesh and the tasks and traces that cross it (spec: registry, mesh). */
import { commandGroup } from '../registry.ts';
import { tasksCommand } from './tasks.ts';
import { traceCommand } from './trace.ts';

export const meshCommand = commandGroup('mesh', 'Look into a TAP mesh: its tasks and their traces across agents.', [
  tasksCommand,
  traceCommand,
]);
