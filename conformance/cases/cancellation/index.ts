/** The cancellation profile's cases, in report order: each file holds the cases of one spec anchor. */
import type { Case } from '../../case.ts';
import * as cancellationTaskCancel from './cancellation.task-cancel.ts';
import * as cancellationRepeatedCancels from './cancellation.repeated-cancels.ts';
import * as tasksCommitPoints from './tasks.commit-points.ts';
import * as cancellationCancelAndDeadline from './cancellation.cancel-and-deadline.ts';
import * as cancellationTiming from './cancellation.timing.ts';

export const cancellationCases: readonly Case[] = [
  cancellationTaskCancel,
  cancellationRepeatedCancels,
  tasksCommitPoints,
  cancellationCancelAndDeadline,
  cancellationTiming,
].flatMap((file) => file.cases);
