/** The tasks profile's cases, in report order: each file holds the cases of one spec anchor. */
import type { Case } from '../../case.ts';
import * as tasksOverview from './tasks.overview.ts';
import * as tasksEvents from './tasks.events.ts';
import * as tasksResult from './tasks.result.ts';
import * as conformanceTestCapabilities from './conformance.test-capabilities.ts';
import * as tasksDeadlines from './tasks.deadlines.ts';
import * as tasksStatus from './tasks.status.ts';
import * as limitsConcurrency from './limits.concurrency.ts';
import * as tasksStates from './tasks.states.ts';
import * as tasksResultSize from './tasks.result-size.ts';
import * as conformanceInputForms from './conformance.input-forms.ts';
import * as tasksDurability from './tasks.durability.ts';
import * as conformanceTargets from './conformance.targets.ts';
import * as tasksQuietTasks from './tasks.quiet-tasks.ts';
import * as tasksQuietSequences from './tasks.quiet-sequences.ts';
import * as tasksQuietRequests from './tasks.quiet-requests.ts';
import * as tasksQuiet10 from './tasks.quiet-1-0.ts';
import * as tasksInputRequest from './tasks.input-request.ts';
import * as tasksInputResponse from './tasks.input-response.ts';
import * as tasksInputWaiting from './tasks.input-waiting.ts';
import * as tasksInputResume from './tasks.input-resume.ts';

export const tasksCases: readonly Case[] = [
  tasksOverview,
  tasksEvents,
  tasksResult,
  conformanceTestCapabilities,
  tasksDeadlines,
  tasksStatus,
  limitsConcurrency,
  tasksStates,
  tasksResultSize,
  conformanceInputForms,
  tasksDurability,
  conformanceTargets,
  tasksQuietTasks,
  tasksQuietSequences,
  tasksQuietRequests,
  tasksQuiet10,
  tasksInputRequest,
  tasksInputResponse,
  tasksInputWaiting,
  tasksInputResume,
].flatMap((file) => file.cases);
