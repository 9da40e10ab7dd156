/** Every case of the workspace profile, in report order (spec: bindings-workspace). */
import type { WorkspaceCase } from '../kit.ts';
import { agentCases } from './agent.ts';
import { claimCases } from './claims.ts';
import { fencingCases } from './fencing.ts';
import { historyCases } from './history.ts';
import { mailboxCases } from './mailbox.ts';
import { planCases } from './plans.ts';
import { reaperCases } from './reaper.ts';
import { refusedCases } from './refused.ts';
import { phaseCases } from './phases.ts';
import { taskCases } from './tasks.ts';

export const WORKSPACE_CASES: readonly WorkspaceCase[] = [
  ...agentCases.filter((c) => !c.last),
  ...taskCases,
  ...claimCases,
  ...phaseCases,
  ...historyCases,
  ...planCases,
  ...reaperCases,
  ...fencingCases,
  ...refusedCases,
  ...mailboxCases,
  ...agentCases.filter((c) => c.last),
];
