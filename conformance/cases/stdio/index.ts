/** The stdio profile's cases, in report order: each file holds the cases of one spec anchor. */
import type { Case } from '../../case.ts';
import * as bindingsStdioStreams from './bindings-stdio.streams.ts';
import * as shutdownEndOfInput from './shutdown.end-of-input.ts';
import * as bindingsStdioLifecycle from './bindings-stdio.lifecycle.ts';
import * as shutdownSignals from './shutdown.signals.ts';
import * as bindingsStdioFraming from './bindings-stdio.framing.ts';
import * as limitsBoundedReading from './limits.bounded-reading.ts';
import * as shutdownEpipe from './shutdown.epipe.ts';
import * as bindingsStdioSession from './bindings-stdio.session.ts';
import * as tasksStates from './tasks.states.ts';
import * as conformanceTargets from './conformance.targets.ts';

export const stdioCases: readonly Case[] = [
  bindingsStdioStreams,
  shutdownEndOfInput,
  bindingsStdioLifecycle,
  shutdownSignals,
  bindingsStdioFraming,
  limitsBoundedReading,
  shutdownEpipe,
  bindingsStdioSession,
  tasksStates,
  conformanceTargets,
].flatMap((file) => file.cases);
