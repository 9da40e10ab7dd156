/** The agent card: who a peer is and what it can do (spec: handshake#agent-card). */
import { Type, type Static } from '@sinclair/typebox';
import { CapabilityName, Count, Identifier, Label, PermissionName, whole } from './common.ts';

export const MediaList = (what: string) =>
  Type.Array(Label({ minLength: 1, maxLength: 256 }), {
    description: `Formats (media types or short names such as "json") the capability ${what}.`,
  });

export const Capability = Type.Object(
  {
    name: CapabilityName,
    version: Label({ description: 'The capability version (semantic versioning recommended).', minLength: 1, maxLength: 64 }),
    description: Type.String({ description: 'What the capability does, for people and for models choosing an agent.', maxLength: 4096 }),
    input_formats: MediaList('accepts'),
    output_formats: MediaList('produces'),
    streaming: Type.Boolean({ description: 'Whether the capability emits output events before its result.' }),
    side_effects: Type.Boolean({
      description: 'Whether running the capability changes anything outside the task (files, services, money).',
    }),
    requires_permission: Type.Optional(PermissionName),
    input_schema: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), { description: 'A JSON Schema for the task input, if the capability publishes one.' }),
    ),
  },
  {
    $id: 'capability.schema.json',
    title: 'Capability',
    description: 'One capability an agent offers, as declared in its card.',
  },
);
export type Capability = Static<typeof Capability>;

export const AgentLimits = Type.Object(
  {
    max_concurrent_tasks: Count('Tasks the agent runs at once across all sessions; more are refused with BUSY.', 1),
    max_task_seconds: Count('The longest a single task may run before it ends timed_out.', 1),
    max_message_bytes: Count('The largest message, in UTF-8 bytes of its JSON text, the agent sends or accepts.', 1024),
    max_tasks_per_session: Type.Optional(Count('Non-terminal tasks one session may hold; more are refused with BUSY.', 1)),
    max_tasks_per_principal: Type.Optional(Count('Non-terminal tasks one principal may hold; more are refused with BUSY.', 1)),
    // spec: mesh#delegation
    max_delegation_depth: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 63,
        description:
          "TAP 1.1: the most agent ids a task.request's delegation may hold; a longer path is refused with DELEGATION_LOOP. 8 when absent.",
        since: '1.1',
      }),
    ),
  },
  { title: 'AgentLimits', description: 'Limits the agent honours.' },
);

/** An absolute URI naming an extension (spec: handshake#negotiated-extensions, since 1.1). */
export const ExtensionUri = Type.String({
  description: 'An absolute URI (RFC 3986) naming an extension, such as "https://example.com/tap/ext/cost/v1".',
  pattern: whole('[A-Za-z][A-Za-z0-9+.-]*:[!-~]+'),
  minLength: 3,
  maxLength: 2048,
});

/** One extension a card lists: its URI, whether the peer requires it (spec: handshake#negotiated-extensions). */
export const Extension = Type.Object(
  {
    uri: ExtensionUri,
    required: Type.Optional(
      Type.Boolean({ description: 'True when the peer works only in a session that uses this extension. Default false.' }),
    ),
    description: Type.Optional(Type.String({ description: 'What the extension adds, for people.', maxLength: 4096 })),
  },
  {
    $id: 'extension.schema.json',
    title: 'Extension',
    description: 'An extension a peer supports (TAP 1.1), as its card lists it; the ack of a session of 1.1 lists those the session uses.',
  },
);
export type Extension = Static<typeof Extension>;

export const AgentCard = Type.Object(
  {
    agent_id: Identifier,
    name: Label({ description: 'A short human-readable name.', minLength: 1, maxLength: 256 }),
    description: Type.String({
      description: 'A natural-language statement of what the agent is good at and what it is not good at.',
      maxLength: 8192,
    }),
    capabilities: Type.Array(Capability, { description: 'What the agent can do. A requester card may list none.' }),
    limits: AgentLimits,
    durability: Type.Optional(
      Type.Union([Type.Literal('process'), Type.Literal('restart')], {
        description: 'How long task and idempotency records live: for the process, or across restarts. Default "process".',
      }),
    ),
    extensions: Type.Optional(
      Type.Array(Extension, {
        description:
          "TAP 1.1: the extensions the peer supports, each URI once; in handshake.init the requester's offer, in handshake.ack what the agent supports.",
        since: '1.1',
      }),
    ),
  },
  {
    $id: 'agent-card.schema.json',
    title: 'AgentCard',
    description: 'Who a TAP peer is and what it can do; sent as `agent` in handshake.init and handshake.ack.',
  },
);
export type AgentCard = Static<typeof AgentCard>;
