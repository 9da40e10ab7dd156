/** The pure TAP protocol core: no platform imports, no I/O; crypto, randomness and time are injected (spec: tap-1-0#abstract). */
export * from './base64url.ts';
export * from './catalogue.ts';
export * from './compose.ts';
export * from './decode.ts';
export * from './delegation.ts';
export * from './errors.ts';
export * from './extensions.ts';
export * from './frame.ts';
export * from './handshake.ts';
export * from './handshake-agent.ts';
export * from './handshake-requester.ts';
export * from './ids.ts';
export * from './ijson.ts';
export * from './jcs.ts';
export * from './params.ts';
export type { Clock, LogLevel, Logger, TimerHandle } from './platform.ts';
export * from './reserved-names.ts';
export * from './signing.ts';
export * from './states.ts';
export * from './trace-context.ts';
export * from './validate.ts';
export * from './versions.ts';
/** The message types, derived from the schemas: the same types as `tapctl gen-types --lang ts` writes, each assignable to the other. */
export type { AgentCard, MessageOf, MessageType, PayloadOf, TapMessage, TaskState } from '../../schemas/src/index.ts';
