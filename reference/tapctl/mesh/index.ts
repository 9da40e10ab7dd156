/** `tapctl mesh …`: looking into a mesh of agents that find each other through a registry (spec: registry). */
import { commandGroup } from '../registry.ts';
import { agentsCommand } from './agents.ts';
import { discoverCommand } from './discover.ts';

export const meshCommand = commandGroup('mesh', 'Look into a mesh: the agents in its registry and who offers what.', [
  agentsCommand,
  discoverCommand,
]);
