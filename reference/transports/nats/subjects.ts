/**
 * The subjects and headers of the NATS binding (spec: bindings-nats#subjects). An agent is
 * addressed by its id, a connection by an id its requester draws; agent ids may hold dots, so
 * they come last in every subject.
 */
import { randomBytes } from 'node:crypto';

/** The prefix of every subject of the binding unless an application picks another. */
export const DEFAULT_PREFIX = 'tap';

/** Headers the binding puts on NATS messages (spec: bindings-nats#frames). */
export const Header = Object.freeze({
  /** The position of a NATS message in its direction of a connection, from 1, without gaps. */
  SEQ: 'Tap-Seq',
  /** "1" on every piece of a frame but its last. */
  MORE: 'Tap-More',
  /** "keepalive" or "close" on a control message, which carries no frame. */
  CONTROL: 'Tap-Control',
  /** The close code of a close control message; its body is the reason. */
  CLOSE_CODE: 'Tap-Close-Code',
  /** On the open request: the connection id the requester drew. */
  CONNECTION: 'Tap-Connection',
  /** On the open request and its reply: how often the sender sends keepalives, in ms. */
  KEEPALIVE_MS: 'Tap-Keepalive-Ms',
  /** On the open reply: "ok", or the close code that refuses the connection (its body is the reason). */
  OPEN: 'Tap-Open',
});

/** The subjects one agent and one of its connections use. */
export interface Subjects {
  /** Where requesters ask the agent to open a connection (request and reply). */
  open: string;
  /** Frames from the requester to the agent on this connection. */
  toAgent: string;
  /** Frames from the agent to the requester on this connection. */
  toRequester: string;
}

const TOKEN = /^[A-Za-z0-9_-]{1,64}$/;
const AGENT_ID = /^[a-z0-9][a-z0-9_-]*(\.[a-z0-9_-]+)*$/;

/** Throws a TypeError unless `prefix` is one or more subject tokens without wildcards. */
export function checkPrefix(prefix: string): string {
  if (!prefix.split('.').every((t) => TOKEN.test(t))) {
    throw new TypeError(`NATS subject prefix "${prefix}" must be dot-separated tokens of letters, digits, "_" and "-"`);
  }
  return prefix;
}

/** Throws a TypeError unless `agentId` is a TAP identifier (which is also a valid subject tail). */
export function checkAgentId(agentId: string): string {
  if (!AGENT_ID.test(agentId) || agentId.length > 128) {
    throw new TypeError(`"${agentId}" is not an agent id: lowercase letters, digits, "_" and "-", in dot-separated segments`);
  }
  return agentId;
}

/** True if `id` can be a connection id: one subject token of 1 to 64 letters, digits, "_" or "-". */
export function isConnectionId(id: string): boolean {
  return TOKEN.test(id);
}

/** A fresh connection id: 128 random bits in base64url. */
export function newConnectionId(): string {
  return randomBytes(16).toString('base64url');
}

/** The subject where agent `agentId` accepts connections (spec: bindings-nats#subjects). */
export function openSubject(prefix: string, agentId: string): string {
  return `${prefix}.open.${agentId}`;
}

/** The subjects of connection `connection` to agent `agentId` (spec: bindings-nats#subjects). */
export function subjectsOf(prefix: string, agentId: string, connection: string): Subjects {
  return {
    open: openSubject(prefix, agentId),
    toAgent: `${prefix}.in.${connection}.${agentId}`,
    toRequester: `${prefix}.out.${connection}.${agentId}`,
  };
}
