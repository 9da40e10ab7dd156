/**
 * The mutants of the reference agent: each breaks one requirement of spec/1.0 and is named
 * `<requirement id>:<how>`. A mutant is the unchanged reference agent behind one mutation layer
 * (conformance/mutation/layer.ts); each chapter of the spec has its table of rows in
 * conformance/mutation/mutants/<chapter>.ts (conformance/mutation/rows.ts says what a row holds).
 */
import { mutantOf, type Mutant } from './rows.ts';
import { rows as envelope } from './mutants/envelope.ts';
import { rows as messages } from './mutants/messages.ts';
import { rows as handshake } from './mutants/handshake.ts';
import { rows as errors } from './mutants/errors.ts';
import { rows as limits } from './mutants/limits.ts';
import { rows as tasks } from './mutants/tasks.ts';
import { rows as tasksListing } from './mutants/tasks-listing.ts';
import { rows as tasksInput } from './mutants/tasks-input.ts';
import { rows as cancellation } from './mutants/cancellation.ts';
import { rows as resume } from './mutants/resume.ts';
import { rows as idempotency } from './mutants/idempotency.ts';
import { rows as authorization } from './mutants/authorization.ts';
import { rows as plans } from './mutants/plans.ts';
import { rows as shutdown } from './mutants/shutdown.ts';
import { rows as integrity } from './mutants/integrity.ts';
import { rows as security } from './mutants/security.ts';
import { rows as versioning } from './mutants/versioning.ts';
import { rows as conformance } from './mutants/conformance.ts';
import { rows as bindingsStdio } from './mutants/bindings-stdio.ts';
import { rows as bindingsWebsocket } from './mutants/bindings-websocket.ts';
import { rows as mesh } from './mutants/mesh.ts';

export type { Mutant } from './rows.ts';

/** Every mutant, chapter by chapter in the order of the spec. */
export const MUTANTS: Mutant[] = [
  envelope,
  messages,
  handshake,
  errors,
  limits,
  tasks,
  tasksListing,
  tasksInput,
  cancellation,
  resume,
  idempotency,
  authorization,
  plans,
  shutdown,
  integrity,
  security,
  versioning,
  conformance,
  bindingsStdio,
  bindingsWebsocket,
  mesh,
]
  .flat()
  .map(mutantOf);
