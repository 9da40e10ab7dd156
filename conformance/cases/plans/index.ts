/** The plans profile's cases, in report order: each file holds the cases of one spec anchor. */
import type { Case } from '../../case.ts';
import * as plansSubmission from './plans.submission.ts';
import * as plansDecisions from './plans.decisions.ts';
import * as plansPlanStates from './plans.plan-states.ts';
import * as plansExecution from './plans.execution.ts';
import * as plansHolding from './plans.holding.ts';

export const plansCases: readonly Case[] = [plansSubmission, plansDecisions, plansPlanStates, plansExecution, plansHolding].flatMap(
  (file) => file.cases,
);
