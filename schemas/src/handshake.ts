/** Handshake payloads (spec: handshake). */
import { Type } from '@sinclair/typebox';
import { AgentCard, ExtensionUri } from './card.ts';
import { CapabilityName, Count, Identifier, Label, Version, whole } from './common.ts';

export const Integrity = Type.Union(
  [
    Type.Literal('none'),
    Type.Object(
      {
        alg: Type.Literal('hmac-sha256'),
        key_id: Identifier,
      },
      { description: 'HMAC-SHA256 with the pre-shared key key_id.' },
    ),
  ],
  { title: 'Integrity', description: '"none", or the MAC to sign every message with from handshake.init on.' },
);

const paramFields = {
  heartbeat_ms: Count('Ping after this long without hearing from the peer; clamped to [1000, 60000].', 0),
  max_message_bytes: Count('The largest message either side sends or accepts, in UTF-8 bytes of its JSON text.', 1024),
  max_concurrent_tasks: Count('Non-terminal tasks this session may hold at once.', 1),
  request_timeout_ms: Count('How long the requester waits for a reply, and how long a plan waits for a decision before it is holding.', 1),
  streaming: Type.Boolean({ description: 'Whether output events are sent before the result.' }),
  integrity: Integrity,
};

export const ProposedParams = Type.Partial(Type.Object(paramFields), {
  title: 'ProposedParams',
  description: "Session parameters the requester proposes; an omitted one takes the agent's value.",
});

export const SessionParams = Type.Object(paramFields, {
  $id: 'session-params.schema.json',
  title: 'SessionParams',
  description: 'The final session parameters fixed by handshake.ack and confirmed by handshake.ready.',
});

export const Credentials = Type.Object(
  {
    scheme: Label({ description: 'The credential scheme, e.g. "bearer".', minLength: 1, maxLength: 64 }),
    token: Type.Optional(Type.String({ description: 'The credential itself.', maxLength: 8192 })),
  },
  { title: 'Credentials', description: "Credentials that authenticate the requester's principal." },
);

export const ResumeRequest = Type.Object(
  {
    session_id: Type.String({ pattern: whole('[A-Za-z0-9_-]{22,128}'), description: 'The session to resume.' }),
    resume_token: Type.String({ minLength: 16, maxLength: 256, description: "The resume_token that session's handshake.ack returned." }),
    tasks: Type.Array(
      Type.Object({
        task_id: Identifier,
        last_sequence: Count('The last sequence the requester received for this task (0 for none).'),
      }),
      { description: 'Per task, where to resume its stream.' },
    ),
  },
  { title: 'ResumeRequest', description: 'Resume an earlier session after a reconnect.' },
);

export const HandshakeInitPayload = Type.Object(
  {
    versions: Type.Array(Version, { minItems: 1, description: 'Every protocol version the requester speaks.' }),
    agent: AgentCard,
    requires: Type.Array(CapabilityName, { description: 'Capabilities the requester needs from the agent.' }),
    params: ProposedParams,
    credentials: Type.Optional(Credentials),
    resume: Type.Optional(ResumeRequest),
  },
  { $id: 'handshake.init.payload.schema.json', title: 'HandshakeInitPayload', description: 'Payload of handshake.init.' },
);

export const HandshakeAckPayload = Type.Object(
  {
    version: Version,
    session_id: Type.String({
      pattern: whole('[A-Za-z0-9_-]{22,128}'),
      description: 'A fresh session id with at least 128 random bits, or the resumed one.',
    }),
    resume_token: Type.String({
      minLength: 16,
      maxLength: 256,
      description: 'Secret needed, with the same principal, to resume this session.',
    }),
    resumed: Type.Boolean({ description: 'Whether the requested resume was granted.' }),
    agent: AgentCard,
    granted: Type.Array(CapabilityName, { description: 'The required capabilities the agent has.' }),
    missing: Type.Array(CapabilityName, { description: 'The required capabilities the agent lacks.' }),
    params: SessionParams,
    resume_window_ms: Count('How long the session stays resumable after losing its transport.'),
    max_retained_messages: Count('How many messages per task the agent retains for resume.', 1),
    extensions: Type.Optional(
      Type.Array(ExtensionUri, {
        description:
          "TAP 1.1, present in every ack of 1.1: the extensions the session uses, the URIs of the requester card's extensions that the agent supports.",
        since: '1.1',
      }),
    ),
  },
  { $id: 'handshake.ack.payload.schema.json', title: 'HandshakeAckPayload', description: 'Payload of handshake.ack.' },
);

export const HandshakeReadyPayload = Type.Object(
  { params: SessionParams },
  {
    $id: 'handshake.ready.payload.schema.json',
    title: 'HandshakeReadyPayload',
    description: 'Payload of handshake.ready: the final params, exactly as in handshake.ack.',
  },
);

export const EmptyPayload = (type: string, description: string) =>
  Type.Object({}, { $id: `${type}.payload.schema.json`, title: `${pascal(type)}Payload`, description });

export function pascal(type: string): string {
  return type
    .split(/[._-]/)
    .map((w) => w[0]!.toUpperCase() + w.slice(1))
    .join('');
}
