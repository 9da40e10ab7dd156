/** The TAP 1.0 schemas: every schema that is emitted as its own file, and the data tables. */
import type { TSchema } from '@sinclair/typebox';
import { AgentCard, Capability, Extension } from './card.ts';
import { TEST_INPUTS } from './conformance.ts';
import { Identifier } from './common.ts';
import { Envelope, Signature } from './envelope.ts';
import { SessionParams } from './handshake.ts';
import { Message, MESSAGE_SCHEMAS, PAYLOADS } from './messages.ts';
import { Plan } from './plan.ts';
import { TaskRecord, WorkspaceConfig } from './task-record.ts';
import { Authorization, ErrorPayload } from './tasks.ts';

export * from './card.ts';
export * from './common.ts';
export * from './conformance.ts';
export * from './envelope.ts';
export * from './handshake.ts';
export * from './listing.ts';
export * from './input.ts';
export * from './messages.ts';
export * from './plan.ts';
export * from './rules.ts';
export * from './shutdown.ts';
export * from './tables.ts';
export * from './task-record.ts';
export * from './tasks.ts';

/** Every schema that gets its own file under schemas/v1/, keyed by its relative $id. */
export function emittedSchemas(): TSchema[] {
  return [
    Identifier,
    Envelope,
    Signature,
    Capability,
    AgentCard,
    SessionParams,
    Extension,
    Authorization,
    ErrorPayload,
    Plan,
    TaskRecord,
    WorkspaceConfig,
    ...Object.values(PAYLOADS),
    ...Object.values(MESSAGE_SCHEMAS),
    Message,
    ...TEST_INPUTS,
  ];
}
