/**
 * One schema per message type: the envelope plus that type's payload and the envelope fields
 * the catalogue makes required for it; and `message`, the union of them all.
 */
import { Type, type Static, type TObject, type TSchema } from '@sinclair/typebox';
import { Envelope } from './envelope.ts';
import { EmptyPayload, HandshakeAckPayload, HandshakeInitPayload, HandshakeReadyPayload, pascal } from './handshake.ts';
import { TaskListPayload, TaskPagePayload } from './listing.ts';
import { InputRequestPayload, InputResponsePayload } from './input.ts';
import { PlanDecisionPayload, PlanSubmitPayload } from './plan.ts';
import { FarewellPayload, ShutdownRequestPayload, ShutdownResponsePayload } from './shutdown.ts';
import { MESSAGES } from './tables.ts';
import {
  ErrorPayload,
  TaskAcceptedPayload,
  TaskCancelPayload,
  TaskEventPayload,
  TaskHandoffPayload,
  TaskRequestPayload,
  TaskResultPayload,
  TaskResumePayload,
  TaskSnapshotPayload,
} from './tasks.ts';

/** The payload schema of each message type. */
export const PAYLOADS = {
  'handshake.init': HandshakeInitPayload,
  'handshake.ack': HandshakeAckPayload,
  'handshake.ready': HandshakeReadyPayload,
  'handshake.go': EmptyPayload('handshake.go', 'Payload of handshake.go: empty.'),
  ping: EmptyPayload('ping', 'Payload of ping: empty.'),
  pong: EmptyPayload('pong', 'Payload of pong: empty.'),
  'task.request': TaskRequestPayload,
  'task.accepted': TaskAcceptedPayload,
  'task.event': TaskEventPayload,
  'task.result': TaskResultPayload,
  'task.cancel': TaskCancelPayload,
  'task.status': EmptyPayload('task.status', 'Payload of task.status: empty.'),
  'task.snapshot': TaskSnapshotPayload,
  'task.resume': TaskResumePayload,
  'plan.submit': PlanSubmitPayload,
  'plan.decision': PlanDecisionPayload,
  'shutdown.request': ShutdownRequestPayload,
  'shutdown.response': ShutdownResponsePayload,
  'task.handoff': TaskHandoffPayload,
  'session.farewell': FarewellPayload,
  error: ErrorPayload,
  'task.list': TaskListPayload,
  'task.page': TaskPagePayload,
  'input.request': InputRequestPayload,
  'input.response': InputResponsePayload,
} as const;

export type MessageType = keyof typeof PAYLOADS;
export type PayloadOf<T extends MessageType> = Static<(typeof PAYLOADS)[T]>;

/** The catalogue entry of message type T. */
type EntryOf<T extends MessageType> = Extract<(typeof MESSAGES)[number], { type: T }>;

/** The envelope members the catalogue makes required for type T, as `messageSchema` does. */
type RequiredOf<T extends MessageType> =
  | (EntryOf<T>['task'] extends true ? 'task_id' : never)
  | (EntryOf<T>['sequenced'] extends true ? 'sequence' : never)
  | (EntryOf<T>['reply_to'] extends 'required' ? 'reply_to' : never)
  | (EntryOf<T>['session_id'] extends 'required' ? 'session_id' : never);

/** A TAP message of type T, derived from the envelope and payload schemas and the catalogue. */
export type MessageOf<T extends MessageType> = Omit<Envelope, 'type' | 'payload'> &
  Required<Pick<Envelope, RequiredOf<T>>> & { type: T; payload: PayloadOf<T> };
export type TapMessage = { [T in MessageType]: MessageOf<T> }[MessageType];

function messageSchema(type: MessageType): TObject {
  const entry = MESSAGES.find((m) => m.type === type);
  if (!entry) throw new Error(`message ${type} is not in the catalogue`);
  const required = ['type', 'payload'];
  if (entry.task) required.push('task_id');
  if (entry.sequenced) required.push('sequence');
  if (entry.reply_to === 'required') required.push('reply_to');
  if (entry.session_id === 'required') required.push('session_id');
  const properties: Record<string, TSchema> = {
    type: Type.Literal(type),
    payload: PAYLOADS[type],
  };
  // Restate the envelope member each required name refers to, so the schema is self-describing.
  for (const name of required) if (!properties[name]) properties[name] = Envelope.properties[name as keyof typeof Envelope.properties];
  const schema = Type.Object(properties, {
    $id: `${type}.schema.json`,
    title: `${pascal(type)}Message`,
    description: entry.description,
    allOf: [Envelope],
  });
  // The envelope's optional members become required for this type.
  schema.required = required;
  return schema;
}

export const MESSAGE_SCHEMAS = Object.fromEntries((Object.keys(PAYLOADS) as MessageType[]).map((t) => [t, messageSchema(t)])) as Record<
  MessageType,
  TObject
>;

export const Message = Type.Unsafe<TapMessage>({
  $id: 'message.schema.json',
  title: 'Message',
  description: 'Any TAP 1.0 message, discriminated by `type`.',
  type: 'object',
  properties: { type: { type: 'string', description: 'The message type; selects the branch.' } },
  required: ['type'],
  discriminator: { propertyName: 'type' },
  oneOf: Object.values(MESSAGE_SCHEMAS),
});
