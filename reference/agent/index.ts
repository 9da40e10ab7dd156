/** The TAP agent runtime: createAgent, the handler context, and the conformance capabilities. */
export { createAgent } from './agent.ts';
export type { Agent, AgentConnection, AgentListener, AgentNatsOptions } from './agent.ts';
export { TaskAborted } from './context.ts';
export type { AbortKind, AgentStore, Handler, TaskContext } from './context.ts';
export { iso, stderrLogger, systemClock } from './options.ts';
export type { AgentOptions, Authenticator, CapabilityDefinition, Clock, Logger, PeerKey, TimerHandle } from './options.ts';
export type { PlanDecision, PlanDraft } from './plans.ts';
export type { AttachOptions } from './session.ts';
export { CONFORMANCE_CAPABILITIES, withConformanceCapabilities } from './test-capabilities.ts';
export { TapError, errorPayload } from '../core/index.ts';
