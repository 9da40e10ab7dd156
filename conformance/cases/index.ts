/** Every conformance case of TAP 1.0, in report order. */
import type { Case } from '../case.ts';
import { authorizationCases } from './authorization.ts';
import { cancellationCases } from './cancellation.ts';
import { envelopeCases } from './envelope.ts';
import { errorCases } from './errors.ts';
import { fixtureCases } from './fixtures.ts';
import { handshakeCases } from './handshake.ts';
import { idempotencyCases } from './idempotency.ts';
import { integrityCases } from './integrity.ts';
import { securityCases } from './security.ts';
import { limitCases } from './limits.ts';
import { tableLimitCases } from './table-limits.ts';
import { sourceCases } from './sources.ts';
import { livenessCases } from './liveness.ts';
import { restartCases } from './restart.ts';
import { planCases } from './plans.ts';
import { resumeCases } from './resume.ts';
import { replayCases } from './replay.ts';
import { shutdownCases } from './shutdown.ts';
import { stdioCases } from './stdio.ts';
import { taskCases } from './tasks.ts';
import { websocketCases } from './websocket.ts';
import { natsCases } from './nats.ts';
import { natsBoundCases } from './nats-bounds.ts';
import { natsDurableCases } from './nats-durable.ts';
import { natsDurableRecordCases } from './nats-durable-records.ts';
import { registryCases } from './registry.ts';
import { chaosCases } from '../chaos.ts';
import { propertyCases } from '../properties.ts';

export const ALL_CASES: readonly Case[] = [
  ...handshakeCases,
  ...envelopeCases,
  ...errorCases,
  ...limitCases,
  ...tableLimitCases,
  ...sourceCases,
  ...fixtureCases,
  ...taskCases,
  ...cancellationCases,
  ...resumeCases,
  ...replayCases,
  ...idempotencyCases,
  ...authorizationCases,
  ...planCases,
  ...shutdownCases,
  ...integrityCases,
  ...securityCases,
  ...stdioCases,
  ...websocketCases,
  ...natsCases,
  ...natsBoundCases,
  ...natsDurableCases,
  ...natsDurableRecordCases,
  ...registryCases,
  ...livenessCases,
  ...restartCases,
  ...propertyCases,
  ...chaosCases,
];
