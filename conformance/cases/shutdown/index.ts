/** The shutdown profile's cases, in report order: each file holds the cases of one spec anchor. */
import type { Case } from '../../case.ts';
import * as shutdownShutdownSequence from './shutdown.shutdown-sequence.ts';
import * as plansDecisions from './plans.decisions.ts';
import * as shutdownRejection from './shutdown.rejection.ts';
import * as errorsOrderOfChecks from './errors.order-of-checks.ts';
import * as shutdownSignals from './shutdown.signals.ts';
import * as shutdownRequesterFarewell from './shutdown.requester-farewell.ts';
import * as cancellationRepeatedCancels from './cancellation.repeated-cancels.ts';
import * as shutdownScope from './shutdown.scope.ts';
import * as shutdownFarewell from './shutdown.farewell.ts';
import * as shutdownInputShutdown from './shutdown.input-shutdown.ts';

export const shutdownCases: readonly Case[] = [
  shutdownShutdownSequence,
  plansDecisions,
  shutdownRejection,
  errorsOrderOfChecks,
  shutdownSignals,
  shutdownRequesterFarewell,
  cancellationRepeatedCancels,
  shutdownScope,
  shutdownFarewell,
  shutdownInputShutdown,
].flatMap((file) => file.cases);
