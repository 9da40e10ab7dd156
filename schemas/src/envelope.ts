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
    traceparent: Type.Optional(
      Type.String({
        description:
          'TAP 1.1: the W3C Trace Context traceparent of the task, version 00: "00-" 32 lowercase hex trace-id (not all zero) "-" 16 lowercase hex parent-id (not all zero) "-" 2 hex flags.',
        since: '1.1',
      }),
    ),
    tracestate: Type.Optional(
      Type.String({ description: 'TAP 1.1: the W3C Trace Context tracestate that goes with traceparent.', since: '1.1' }),
    ),
    baggage: Type.Optional(Type.String({ description: 'TAP 1.1: the W3C Baggage of the task.', since: '1.1' })),
  },
  { title: 'Metadata', description: 'Open metadata; extensions live here and in payload keys prefixed "x-".' },
);

/** The W3C forms of the trace context members, checked in a message of 1.1 (spec: envelope#trace-context). */
const TRACEPARENT = whole('00-(?!0{32}-)[0-9a-f]{32}-(?!0{16}-)[0-9a-f]{16}-[0-9a-f]{2}');
const TRACESTATE_MEMBER =
  '(?:[a-z][a-z0-9_*/-]{0,255}|[a-z0-9][a-z0-9_*/-]{0,240}@[a-z][a-z0-9_*/-]{0,13})=[\\x20-\\x2b\\x2d-\\x3c\\x3e-\\x7e]{0,255}[\\x21-\\x2b\\x2d-\\x3c\\x3e-\\x7e]';
const TRACESTATE = whole(`${TRACESTATE_MEMBER}(?:[ \\t]*,[ \\t]*${TRACESTATE_MEMBER}){0,31}`);
const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
const BAGGAGE_VALUE = '[\\x21\\x23-\\x2b\\x2d-\\x3a\\x3c-\\x5b\\x5d-\\x7e]*';
const BAGGAGE_MEMBER = `${TOKEN}[ \\t]*=[ \\t]*${BAGGAGE_VALUE}(?:[ \\t]*;[ \\t]*${TOKEN}(?:[ \\t]*=[ \\t]*${BAGGAGE_VALUE})?)*`;
const BAGGAGE = whole(`${BAGGAGE_MEMBER}(?:[ \\t]*,[ \\t]*${BAGGAGE_MEMBER}){0,63}`);

/**
 * In a message of TAP 1.1 or a later minor, the trace context members of `metadata` have their
 * W3C forms; in a message of 1.0 they are unknown metadata members like any other (spec:
 * envelope#trace-context, versioning#tap-1-1).
 */
export const TRACE_CONTEXT_RULE = {
  if: { type: 'object', properties: { protocol: { type: 'string', pattern: whole('tap/1\\.[1-9][0-9]{0,3}') } }, required: ['protocol'] },
  then: {
    type: 'object',
    properties: {
      metadata: {
        type: 'object',
        properties: {
          traceparent: { type: 'string', pattern: TRACEPARENT },
          tracestate: { type: 'string', pattern: TRACESTATE, maxLength: 8192 },
          baggage: { type: 'string', pattern: BAGGAGE, maxLength: 8192 },
        },
      },
    },
  },
};

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
    allOf: [TRACE_CONTEXT_RULE],
  },
);
export type Envelope = Static<typeof Envelope>;

/**
 * A decoded message as the envelope checks read it, before its schema is checked: the members
 * every check needs, typed as the envelope has them, and anything else unread.
 */
export type DecodedEnvelope = Pick<Envelope, 'type' | 'message_id' | 'source' | 'target'> & Record<string, unknown>;
