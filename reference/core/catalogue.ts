/**
 * The message catalogue, read from schemas/v1/messages.json: which types exist, who sends them,
 * what they answer and when they may flow (spec: messages#catalogue).
 */
import type { MessageEntry, MessageType } from '../../schemas/src/index.ts';
import catalogue from '../../schemas/v1/messages.json' with { type: 'json' };

/**
 * The protocol string of a message that belongs to no negotiated version yet: an answer before
 * handshake.ack. Every 1.x peer accepts it (spec: envelope#protocol, versioning#version-check).
 */
export const PROTOCOL = 'tap/1.0';

/** The versions this library speaks, highest first (spec: handshake#version-negotiation, versioning#tap-1-1). */
export const SUPPORTED_VERSIONS: readonly string[] = ['1.1', '1.0'];

/** Every catalogue entry, in catalogue order. */
export const MESSAGE_CATALOGUE: readonly MessageEntry[] = catalogue.messages as MessageEntry[];

const byType = new Map<string, MessageEntry>(MESSAGE_CATALOGUE.map((m) => [m.type, m]));

/** The catalogue entry of a message type, or undefined for a type TAP 1.0 does not define (spec: messages#catalogue). */
export function messageEntry(type: string): MessageEntry | undefined {
  return byType.get(type);
}

/** True for a type in the catalogue (spec: messages#direction). */
export function isKnownType(type: string): type is MessageType {
  return byType.has(type);
}

/** True when a requester may send this type to an agent (spec: messages#direction). */
export function isRequesterToAgent(type: string): boolean {
  const d = byType.get(type)?.direction;
  return d === 'requester_to_agent' || d === 'both';
}

/** True when an agent may send this type to a requester (spec: messages#direction). */
export function isAgentToRequester(type: string): boolean {
  const d = byType.get(type)?.direction;
  return d === 'agent_to_requester' || d === 'both';
}

/** The role a peer plays in a session. */
export type Role = 'agent' | 'requester';

/** True when a peer in `receiver` role may receive this type, i.e. it is known and flows that way (spec: messages#direction). */
export function mayReceive(receiver: Role, type: string): boolean {
  return receiver === 'agent' ? isRequesterToAgent(type) : isAgentToRequester(type);
}

/** True for the types that may flow before handshake.go: handshake messages, ping, pong and error (spec: handshake#before-go). */
export function allowedBeforeHandshake(type: string): boolean {
  return byType.get(type)?.before_handshake === true;
}

/** True for the types that carry `sequence`: the messages that make up a task's stream (spec: tasks#sequences). */
export function isSequenced(type: string): boolean {
  return byType.get(type)?.sequenced === true;
}

/** The direct reply types a request expects; empty for a message that expects none (spec: messages#requests-and-replies). */
export function replyTypes(type: string): readonly string[] {
  return byType.get(type)?.replies ?? [];
}
