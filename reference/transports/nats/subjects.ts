/**
 * The subjects and headers of the NATS binding (spec: bindings-nats#subjects), and the one builder
 * every subject of the binding goes through: each part is checked for what it is (a prefix, a TAP
 * identifier, a connection id, a JetStream name), so that no value from a record, a header or a
 * command line can put a wildcard, an empty token or a space into a subject. Wildcards come only
 * from the `Wildcard` constants. Agent ids may hold dots, so they come last in every subject.
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

/** A value that cannot be part of a subject: says which value, as what, and what it must be. */
export class SubjectPartError extends TypeError {
  override readonly name = 'SubjectPartError';
}

/** The wildcards a subject may hold: only through these constants, never from a value. */
export const Wildcard = Object.freeze({ TOKEN: Symbol('*'), TAIL: Symbol('>') });

/** One part of a subject. */
export type SubjectPart =
  /** Fixed tokens of the binding, e.g. "$JS.API.STREAM.INFO": no wildcard can pass. */
  | string
  /** A TAP identifier (agent id, capability, task id), which may hold dots. */
  | { id: unknown; what: string }
  /** One token: a connection id, a stream, consumer or bucket name. */
  | { token: unknown; what: string }
  /** A placeholder `{name}` for documentation (the AsyncAPI file and the spec's tables). */
  | { template: string }
  | (typeof Wildcard)[keyof typeof Wildcard];

const TOKEN = /^[A-Za-z0-9_-]{1,64}$/;
const NAME = /^[A-Za-z0-9_-]{1,255}$/;
const IDENTIFIER = /^[a-z0-9][a-z0-9_-]*(\.[a-z0-9_-]+)*$/;
const LITERAL = /^\$?[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;

const shown = (value: unknown): string => (typeof value === 'string' ? JSON.stringify(value.slice(0, 80)) : String(value));

/** The value if it is a TAP identifier (1 to 128 characters); a SubjectPartError naming `what` otherwise. */
export function checkIdentifier(value: unknown, what: string): string {
  if (typeof value === 'string' && value.length <= 128 && IDENTIFIER.test(value)) return value;
  throw new SubjectPartError(
    `${shown(value)} is not a valid ${what}: lowercase letters, digits, "_" and "-" in dot-separated segments, at most 128 characters (no "*", ">" or spaces), so it cannot be part of a NATS subject`,
  );
}

function checkToken(value: unknown, what: string, pattern = TOKEN): string {
  if (typeof value === 'string' && pattern.test(value)) return value;
  throw new SubjectPartError(
    `${shown(value)} is not a valid ${what}: one NATS subject token of letters, digits, "_" and "-" (no ".", "*", ">" or spaces)`,
  );
}

/**
 * The one builder of the binding's subjects: joins the parts with dots after checking each for
 * what it is. Throws a SubjectPartError naming the first part that does not fit.
 */
export function buildSubject(...parts: readonly SubjectPart[]): string {
  return parts
    .map((part) => {
      if (part === Wildcard.TOKEN) return '*';
      if (part === Wildcard.TAIL) return '>';
      if (typeof part === 'string') {
        if (!LITERAL.test(part)) throw new SubjectPartError(`"${part}" is not a fixed part of a NATS subject`);
        return part;
      }
      if (typeof part !== 'object' || part === null) throw new SubjectPartError(`${String(part)} is not a part of a NATS subject`);
      if ('template' in part) return `{${checkToken(part.template, 'placeholder')}}`;
      if ('id' in part) return checkIdentifier(part.id, part.what);
      return checkToken(part.token, part.what, NAME);
    })
    .join('.');
}

/** Throws a TypeError unless `prefix` is one or more subject tokens without wildcards. */
export function checkPrefix(prefix: string): string {
  if (typeof prefix !== 'string' || !prefix.split('.').every((t) => TOKEN.test(t))) {
    throw new SubjectPartError(`NATS subject prefix ${shown(prefix)} must be dot-separated tokens of letters, digits, "_" and "-"`);
  }
  return prefix;
}

/** Throws a TypeError unless `agentId` is a TAP identifier (which is also a valid subject tail). */
export function checkAgentId(agentId: string): string {
  return checkIdentifier(agentId, 'agent id');
}

/** True if `id` can be a connection id: one subject token of 1 to 64 letters, digits, "_" or "-". */
export function isConnectionId(id: string): boolean {
  return typeof id === 'string' && TOKEN.test(id);
}

/** A fresh connection id: 128 random bits in base64url. */
export function newConnectionId(): string {
  return randomBytes(16).toString('base64url');
}

/** A part for the agent id: a placeholder when asked for one (`{agent_id}`), else the checked id. */
type AgentPart = string | { template: string };
const agentPart = (agentId: AgentPart): SubjectPart => (typeof agentId === 'string' ? { id: agentId, what: 'agent id' } : agentId);
const connectionPart = (c: string | { template: string } | typeof Wildcard.TOKEN): SubjectPart =>
  typeof c === 'string' ? { token: checkToken(c, 'connection id'), what: 'connection id' } : c;

/** The subject where agent `agentId` accepts connections (spec: bindings-nats#subjects). */
export function openSubject(prefix: string, agentId: AgentPart): string {
  return buildSubject(checkPrefix(prefix), 'open', agentPart(agentId));
}

/** The subjects of connection `connection` to agent `agentId` (spec: bindings-nats#subjects). */
export function subjectsOf(
  prefix: string,
  agentId: AgentPart,
  connection: string | { template: string } | typeof Wildcard.TOKEN,
): Subjects {
  const p = checkPrefix(prefix);
  return {
    open: openSubject(p, agentId),
    toAgent: buildSubject(p, 'in', connectionPart(connection), agentPart(agentId)),
    toRequester: buildSubject(p, 'out', connectionPart(connection), agentPart(agentId)),
  };
}

/** The inbox prefix of a client authenticated as NATS user `user` (spec: bindings-nats#security): `_INBOX_<user>`, each character outside letters, digits, "_" and "-" as "_". */
export function inboxPrefixOf(user: string): string {
  return buildSubject(`_INBOX_${user.replace(/[^A-Za-z0-9_-]/g, '_')}`.slice(0, 255));
}

/** A JetStream API subject `$JS.API.<verb…>` on a stream (and a consumer): for permissions and advisories. */
export function jsApiSubject(verb: string, stream?: string | typeof Wildcard.TOKEN, consumer?: SubjectPart): string {
  const parts: SubjectPart[] = ['$JS.API', verb];
  if (stream !== undefined) parts.push(typeof stream === 'string' ? { token: stream, what: 'stream name' } : stream);
  if (consumer !== undefined) parts.push(consumer);
  return buildSubject(...parts);
}

/** The advisory the server publishes when a delivery of `consumer` on `stream` reaches max_deliver (spec: bindings-nats#dead-letters). */
export function maxDeliveriesAdvisory(stream: string, consumer: string | typeof Wildcard.TOKEN): string {
  return buildSubject(
    '$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES',
    { token: stream, what: 'stream name' },
    typeof consumer === 'string' ? { token: consumer, what: 'consumer name' } : consumer,
  );
}

/** The subject of key `key` in key-value bucket `bucket` (`$KV.<bucket>.<key>`); a key is a TAP identifier or a wildcard. */
export function kvSubject(bucket: string, key: string | typeof Wildcard.TAIL): string {
  return buildSubject('$KV', { token: bucket, what: 'bucket name' }, typeof key === 'string' ? { id: key, what: 'bucket key' } : key);
}
