/**
 * Every conformance case of TAP 1.0, in report order: the profiles in the order of PROFILES, each
 * profile's cases from its folder, conformance/cases/<profile>/, one file per spec anchor.
 */
import type { Case } from '../case.ts';
import { coreCases } from './core/index.ts';
import { tasksCases } from './tasks/index.ts';
import { cancellationCases } from './cancellation/index.ts';
import { streamingResumeCases } from './streaming-resume/index.ts';
import { idempotencyCases } from './idempotency/index.ts';
import { authorizationCases } from './authorization/index.ts';
import { plansCases } from './plans/index.ts';
import { shutdownCases } from './shutdown/index.ts';
import { integrityCases } from './integrity/index.ts';
import { securityCases } from './security/index.ts';
import { stdioCases } from './stdio/index.ts';
import { websocketCases } from './websocket/index.ts';
import { natsCases } from './nats/index.ts';
import { natsDurableCases } from './nats-durable/index.ts';
import { registryCases } from './registry/index.ts';

export const ALL_CASES: readonly Case[] = [
  ...coreCases,
  ...tasksCases,
  ...cancellationCases,
  ...streamingResumeCases,
  ...idempotencyCases,
  ...authorizationCases,
  ...plansCases,
  ...shutdownCases,
  ...integrityCases,
  ...securityCases,
  ...stdioCases,
  ...websocketCases,
  ...natsCases,
  ...natsDurableCases,
  ...registryCases,
];
