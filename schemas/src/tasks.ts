/** Task payloads (spec: tasks). */
import { Type } from '@sinclair/typebox';
import { CapabilityName, Count, ErrorCode, Identifier, JsonValue, Label, literals, PermissionName, Timestamp, Version } from './common.ts';
import { Extension, ExtensionUri } from './card.ts';
import { PendingInput } from './input.ts';
import { discriminated, whenRequires, whenRequiresOneOf } from './rules.ts';
import { TASK_STATES, TERMINAL_STATES } from './tables.ts';

export const TaskStateSchema = literals(TASK_STATES, 'A task state (task-states.json).');
export const TerminalState = literals(TERMINAL_STATES, 'A terminal task state.');

export const ErrorPayload = Type.Object(
  {
    code: ErrorCode,
    message: Type.String({ description: 'A human-readable explanation.', maxLength: 8192 }),
    retryable: Type.Boolean({ description: 'Whether the same request may be retried automatically.' }),
    details: Type.Optional(
      Type.Object(
        {
          issues: Type.Optional(
            Type.Array(Type.Object({ path: Type.String(), keyword: Type.String(), message: Type.String() }), {
              description: 'INVALID_MESSAGE: one entry per schema failure.',
            }),
          ),
          supported: Type.Optional(Type.Array(Version, { description: 'UNSUPPORTED_VERSION: the versions the sender speaks.' })),
          required_permission: Type.Optional(Type.String({ description: 'PERMISSION_DENIED: the permission the capability requires.' })),
          retry_after_ms: Type.Optional(Count('RATE_LIMITED: how long to wait before sending again.')),
          earliest_sequence: Type.Optional(Count('RESUME_UNAVAILABLE: the first sequence still retained.', 1)),
          indeterminate: Type.Optional(Type.Boolean({ description: 'True when a crash interrupted a step of the task.' })),
          checkpoint: Type.Optional(
            Type.Record(Type.String(), Type.Unknown(), { description: 'The task checkpoint, when it ends without a retryable error.' }),
          ),
          missing: Type.Optional(
            Type.Array(ExtensionUri, {
              description: 'EXTENSION_REQUIRED (1.1): the required extensions the other side lacks.',
              since: '1.1',
            }),
          ),
          extensions: Type.Optional(
            Type.Array(Extension, { description: "EXTENSION_REQUIRED (1.1): the extensions of the agent's card.", since: '1.1' }),
          ),
          delegation: Type.Optional(
            Type.Array(Identifier, {
              description: "DELEGATION_LOOP (1.1): the request's delegation path as it came.",
              maxItems: 64,
              since: '1.1',
            }),
          ),
        },
        { description: 'Code-specific details; open, but the members named here have fixed meanings (spec: errors#details).' },
      ),
    ),
    fatal: Type.Optional(Type.Boolean({ description: 'True when the sender ends the session after this error.' })),
  },
  {
    $id: 'error-payload.schema.json',
    title: 'ErrorPayload',
    description: 'A structured error: the payload of error, and the error of a failed task.',
  },
);

export const Authorization = Type.Object(
  {
    permissions: Type.Array(PermissionName, { description: 'Permissions granted to this task.' }),
    resources: Type.Array(Label({ minLength: 1, maxLength: 2048 }), { description: 'Resources (URIs) the task may touch.' }),
    expires_at: Timestamp,
  },
  { $id: 'authorization.schema.json', title: 'Authorization', description: 'The grant that travels with a task.' },
);

export const TaskRequestPayload = Type.Object(
  {
    capability: CapabilityName,
    input: JsonValue,
    authorization: Type.Optional(Authorization),
    timeout_ms: Type.Optional(Count('The task ends timed_out this long after the agent received the request.', 1)),
    // spec: tasks#quiet-tasks
    quiet: Type.Optional(
      Type.Boolean({
        description:
          'TAP 1.1: true asks for the outcome only: no task.accepted and no task.event, only what the task needs from the requester and its task.result.',
        since: '1.1',
      }),
    ),
    // spec: mesh#delegation
    delegation: Type.Optional(
      Type.Array(Identifier, {
        description:
          'TAP 1.1: the agent ids of the agents whose tasks caused this one, the first delegator first; an agent that delegates appends its own id. Absent or empty for a task sent on its own behalf.',
        maxItems: 64,
        uniqueItems: true,
        since: '1.1',
      }),
    ),
  },
  { $id: 'task.request.payload.schema.json', title: 'TaskRequestPayload', description: 'Payload of task.request.' },
);

export const TaskAcceptedPayload = Type.Object(
  {
    capability: CapabilityName,
    deadline: Timestamp,
    previous_task_id: Type.Optional(Identifier),
  },
  {
    $id: 'task.accepted.payload.schema.json',
    title: 'TaskAcceptedPayload',
    description: 'Payload of task.accepted: the effective deadline, and the task this one retries.',
  },
);

/**
 * Payload of task.event: one variant per kind, each with the members its kind requires (spec:
 * tasks#events). The rules below are both the schema's allOf and the variants of its type.
 */
export const TaskEventPayload = discriminated(
  'kind',
  {
    kind: literals(['state', 'progress', 'output', 'log'], 'What the event reports.'),
    state: Type.Optional(
      literals(
        ['running', 'cancelling', 'input_required'],
        'The state entered (kind "state"); awaiting_approval is entered by plan.submit itself, the initial and terminal states by task.accepted and task.result; input_required (TAP 1.1) is followed by its input.request.',
      ),
    ),
    percent: Type.Optional(Type.Number({ minimum: 0, maximum: 100, description: 'Progress in percent (kind "progress").' })),
    stage: Type.Optional(
      Label({ maxLength: 256, description: 'The stage the task is in (kind "progress"); "plan.holding" for a late plan reminder.' }),
    ),
    message: Type.Optional(Type.String({ maxLength: 65536, description: 'A human-readable message (kinds "progress" and "log").' })),
    level: Type.Optional(literals(['debug', 'info', 'warn', 'error'], 'Log level (kind "log").')),
    data: Type.Optional(JsonValue),
  },
  [
    whenRequires('kind', 'state', { state: { type: 'string' } }),
    whenRequiresOneOf('kind', 'progress', { percent: { type: 'number' }, stage: { type: 'string' }, message: { type: 'string' } }),
    whenRequires('kind', 'output', { data: {} }),
    whenRequires('kind', 'log', { message: { type: 'string' } }),
  ],
  { $id: 'task.event.payload.schema.json', title: 'TaskEventPayload', description: 'Payload of task.event.' },
);

export const TaskOutcome = {
  status: TerminalState,
  output: Type.Optional(JsonValue),
  error: Type.Optional(ErrorPayload),
};

const outcomeRules = [
  {
    if: { type: 'object', properties: { status: { const: 'completed' } }, required: ['status'] },
    then: {
      type: 'object',
      properties: { output: {} },
      required: ['output'],
      not: { type: 'object', properties: { error: {} }, required: ['error'] },
    },
  },
  {
    if: { type: 'object', properties: { status: { enum: ['failed', 'timed_out'] } }, required: ['status'] },
    then: { type: 'object', properties: { error: {} }, required: ['error'] },
  },
  {
    if: { type: 'object', properties: { status: { const: 'cancelled' } }, required: ['status'] },
    then: {
      anyOf: [
        {
          not: {
            anyOf: [
              { type: 'object', properties: { output: {} }, required: ['output'] },
              { type: 'object', properties: { error: {} }, required: ['error'] },
            ],
          },
        },
        {
          type: 'object',
          properties: { error: { type: 'object', properties: { code: { enum: ['SHUTTING_DOWN', 'SESSION_LOST'] } }, required: ['code'] } },
          required: ['error'],
        },
      ],
    },
  },
];

export const TaskResultPayload = Type.Object(TaskOutcome, {
  $id: 'task.result.payload.schema.json',
  title: 'TaskResultPayload',
  description:
    'Payload of task.result: a terminal status with output (completed), an error (failed, timed_out), or neither (cancelled, except after shutdown or session loss).',
  allOf: outcomeRules,
});

export const TaskCancelPayload = Type.Object(
  { reason: Type.Optional(Type.String({ maxLength: 4096, description: 'Why the requester cancels.' })) },
  { $id: 'task.cancel.payload.schema.json', title: 'TaskCancelPayload', description: 'Payload of task.cancel.' },
);

export const TaskResumePayload = Type.Object(
  { last_sequence: Count('The last sequence the requester received (0 for none); later ones are re-sent.') },
  { $id: 'task.resume.payload.schema.json', title: 'TaskResumePayload', description: 'Payload of task.resume.' },
);

export const TaskSnapshotPayload = Type.Object(
  {
    state: TaskStateSchema,
    capability: CapabilityName,
    last_sequence: Count('The last sequence already sent for the task.', 1),
    created_at: Timestamp,
    updated_at: Timestamp,
    result: Type.Optional(Type.Object(TaskOutcome, { description: 'The result, once the task is terminal.', allOf: outcomeRules })),
    plan: Type.Optional(
      Type.Object(
        {
          plan_id: Identifier,
          state: literals(
            ['pending', 'holding', 'approved', 'executing', 'completed', 'rejected', 'needs_revision', 'withdrawn'],
            'The plan state.',
          ),
        },
        { description: "The task's current plan, if any." },
      ),
    ),
    previous_task_id: Type.Optional(Identifier),
    input_request: PendingInput('TAP 1.1: the pending input request, while the task is input_required.'),
  },
  {
    $id: 'task.snapshot.payload.schema.json',
    title: 'TaskSnapshotPayload',
    description: 'Payload of task.snapshot: the task as it stands when the reply is sent.',
  },
);

export const TaskHandoffPayload = Type.Object(
  {
    checkpoint: Type.Record(Type.String(), Type.Unknown(), { description: 'Opaque state from which another agent can resume the work.' }),
    completed_steps: Type.Array(Type.String({ maxLength: 4096 }), { description: 'Steps already done.' }),
    remaining_steps: Type.Array(Type.String({ maxLength: 4096 }), { description: 'Steps still to do.' }),
    resume_hint: Type.String({ maxLength: 8192, description: 'How to pick the work up.' }),
    input_request: PendingInput('TAP 1.1: the input request still pending when a task in input_required was handed off.'),
  },
  { $id: 'task.handoff.payload.schema.json', title: 'TaskHandoffPayload', description: 'Payload of task.handoff.' },
);

export { CapabilityName };
