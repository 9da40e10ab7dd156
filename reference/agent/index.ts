/** The TAP agent runtime: createAgent, the handler context, and the conformance capabilities. */
export { createAgent } from './agent.ts';
export type { Agent, AgentConnection, AgentEndpoint, AgentListener, AgentListenOptions, AgentNatsOptions } from './agent.ts';
export { CapabilityError, TaskAborted } from './handler.ts';
export type { AbortKind, AgentStore, CapabilityDefinition, Handler, TaskContext } from './handler.ts';
export type { PlanDecision, PlanDraft } from './model.ts';
export { stderrLogger, systemClock } from './options.ts';
export type {
  AgentExtension,
  AgentOptions,
  AuthenticatedCredentials,
  Authenticator,
  AuthenticatorAnswer,
  Clock,
  Logger,
  PeerKey,
  TimerHandle,
} from './options.ts';
export { DEFAULT_CLOCK_TOLERANCE_SEC, jwtAuthenticator, readJwtKeys, scopesOf } from './jwt.ts';
export type { JwtAuthenticatorOptions } from './jwt.ts';
export { iso } from './outbound.ts';
export type { AttachOptions } from './session.ts';
export { CONFORMANCE_CAPABILITIES, CONFORMANCE_EXTENSION, withConformanceCapabilities } from './conformance-capabilities.ts';
export { TapError, errorPayload } from '../core/index.ts';
export type { AgentCard, Capability } from '../../schemas/src/index.ts';
export { CONFORMANCE_VAR, keysFromEnv } from './environment.ts';
