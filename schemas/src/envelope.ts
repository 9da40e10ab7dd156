/** The envelope every TAP message shares (spec: envelope). */
import { Type, type Static } from '@sinclair/typebox';
import { Count, Identifier, Label, MessageId, Timestamp, whole } from './common.ts';

export const Signature = Type.Object(
  {
    alg: Type.Literal('hmac-sha256', { description: 'The MAC algorithm; TAP 1.0 defines only hmac-sha256.' }),
    key_id: Identifier,
    value: Type.String({
      description:
        'base64url without padding of the HMAC-SHA256 over the RFC 8785 canonical form of the message with signature.value removed.',
      pattern: whole('[A-Za-z0-9_-]{43}'),
    }),
  },
  { $id: 'signature.schema.json', title: 'Signature', description: 'The message MAC, present when integrity was negotiated.' },
);

export const Metadata = Type.Object(
  {
    trace_id: Type.Optional(Label({ description: 'A trace id for distributed tracing (W3C trace-context recommended).', maxLength: 128 })),
    span_id: Type.Optional(Label({ description: 'The span id of the sender.', maxLength: 128 })),
    attempt: Type.Optional(Count('Which attempt of the sender this message is, from 1.', 1)),
  },
  { title: 'Metadata', description: 'Open metadata; extensions live here and in payload keys prefixed "x-".' },
);

export const Envelope = Type.Object(
  {
    protocol: Type.String({
      description: 'The protocol and version: "tap/MAJOR.MINOR".',
      pattern: whole('tap/(0|[1-9][0-9]{0,3})\\.(0|[1-9][0-9]{0,3})'),
    }),
    message_id: MessageId,
    type: Type.String({
      description: 'A message type from the catalogue: dotted lowercase.',
      pattern: whole('[a-z]+(\\.[a-z]+)*'),
      maxLength: 64,
    }),
    source: Identifier,
    target: Type.Union([Identifier, Type.Literal('*')], {
      description: 'The receiver\'s agent id; "*" only in handshake.init, when the requester does not yet know it.',
    }),
    timestamp: Timestamp,
    session_id: Type.Optional(
      Type.String({
        description: 'The session the message belongs to; required from handshake.ready on.',
        pattern: whole('[A-Za-z0-9_-]{22,128}'),
      }),
    ),
    task_id: Type.Optional(Identifier),
    reply_to: Type.Optional(MessageId),
    sequence: Type.Optional(Count("Position of this message in its task's stream: 1, 2, 3 … without gaps.", 1)),
    deadline: Type.Optional(Timestamp),
    idempotency_key: Type.Optional(Label({ description: 'Makes a side-effecting request safe to retry.', minLength: 1, maxLength: 256 })),
    metadata: Type.Optional(Metadata),
    signature: Type.Optional(Signature),
    payload: Type.Record(Type.String(), Type.Unknown(), { description: 'The type-specific payload.' }),
  },
  {
    $id: 'envelope.schema.json',
    title: 'Envelope',
    description: 'The fields every TAP message carries. Unknown members are ignored by receivers.',
    if: { type: 'object', properties: { type: { const: 'handshake.init' } }, required: ['type'] },
    then: {},
    else: { type: 'object', properties: { target: { $ref: 'identifier.schema.json' } } },
  },
);
export type Envelope = Static<typeof Envelope>;

/**
 * A decoded message as the envelope checks read it, before its schema is checked: the members
 * every check needs, typed as the envelope has them, and anything else unread.
 */
export type DecodedEnvelope = Pick<Envelope, 'type' | 'message_id' | 'source' | 'target'> & Record<string, unknown>;
