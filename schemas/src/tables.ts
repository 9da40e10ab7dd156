/**
 * The protocol's data tables: task states and transitions, the error registry, the message
 * catalogue. They are emitted as JSON beside the schemas and read from there by the reference
 * library and the conformance harness; this file is their only source.
 */

/** Task states; the first is the initial state (spec: tasks#states). */
export const TASK_STATES = [
  'accepted',
  'running',
  'awaiting_approval',
  'input_required',
  'cancelling',
  'completed',
  'failed',
  'cancelled',
  'timed_out',
] as const;
export type TaskState = (typeof TASK_STATES)[number];

/** The states a later version than 1.0 added, with that version: used only in a session of it (spec: versioning#tap-1-1, tasks#input-required). */
export const STATE_SINCE: Readonly<Partial<Record<TaskState, string>>> = { input_required: '1.1' };

export const TERMINAL_STATES = ['completed', 'failed', 'cancelled', 'timed_out'] as const satisfies readonly TaskState[];

/** Every legal transition, with what triggers it (spec: tasks#transitions). */
export const TASK_TRANSITIONS: ReadonlyArray<{ from: TaskState; to: TaskState; trigger: string; since?: string }> = [
  { from: 'accepted', to: 'running', trigger: 'the agent starts the work' },
  { from: 'accepted', to: 'failed', trigger: 'the work cannot start' },
  { from: 'accepted', to: 'cancelled', trigger: 'task.cancel, or shutdown, before the work started' },
  { from: 'accepted', to: 'timed_out', trigger: 'the effective deadline passed before the work started' },
  { from: 'running', to: 'completed', trigger: 'the work succeeded' },
  { from: 'running', to: 'failed', trigger: 'the work failed' },
  { from: 'running', to: 'timed_out', trigger: 'the effective deadline passed' },
  { from: 'running', to: 'awaiting_approval', trigger: 'plan.submit' },
  { from: 'running', to: 'cancelling', trigger: 'task.cancel, or shutdown' },
  { from: 'awaiting_approval', to: 'running', trigger: 'plan.decision approved' },
  { from: 'awaiting_approval', to: 'failed', trigger: 'plan.decision rejected (PLAN_REJECTED)' },
  { from: 'awaiting_approval', to: 'cancelling', trigger: 'task.cancel, or shutdown' },
  { from: 'awaiting_approval', to: 'timed_out', trigger: 'the effective deadline passed' },
  { from: 'cancelling', to: 'cancelled', trigger: 'the agent released what the task held' },
  { from: 'cancelling', to: 'completed', trigger: 'the work had already succeeded' },
  { from: 'cancelling', to: 'failed', trigger: 'the work had already failed' },
  { from: 'running', to: 'input_required', trigger: 'input.request, after its state event', since: '1.1' },
  { from: 'input_required', to: 'running', trigger: 'input.response with an answer that matches the schema', since: '1.1' },
  { from: 'input_required', to: 'cancelling', trigger: 'task.cancel, shutdown, or the loss of the session', since: '1.1' },
  { from: 'input_required', to: 'timed_out', trigger: 'the effective deadline passed', since: '1.1' },
];

export type ErrorCategory = 'message' | 'session' | 'security' | 'task' | 'plan' | 'capacity' | 'internal' | 'workspace';

export interface ErrorCodeEntry {
  code: string;
  category: ErrorCategory;
  retryable: boolean;
  /** always: the sender closes the session after it; never: the session goes on; may: the sender decides. */
  fatal: 'always' | 'never' | 'may';
  meaning: string;
  /** The version that added the code, when later than 1.0: used only in a session of that version (spec: versioning#tap-1-1). */
  since?: string;
}

/**
 * The error registry (spec: errors#registry): a literal, so that its codes are a type
 * (`ErrorCodeName` below, the reference's ErrorCode) with no second list to keep in step.
 */
export const ERROR_CODES = [
  {
    code: 'MALFORMED_MESSAGE',
    category: 'message',
    retryable: false,
    fatal: 'may',
    meaning:
      'The frame is not one valid UTF-8 JSON object (invalid JSON or UTF-8, a BOM, an array or scalar, or duplicate member names where refused).',
  },
  {
    code: 'INVALID_MESSAGE',
    category: 'message',
    retryable: false,
    fatal: 'may',
    meaning: 'A JSON object that fails the envelope or payload schema, or is not I-JSON.',
  },
  {
    code: 'UNSUPPORTED_VERSION',
    category: 'session',
    retryable: false,
    fatal: 'may',
    meaning:
      'No common protocol version, or a message in a version other than the negotiated one; details.extensions lists the versions the sender speaks. Fatal except for another minor version of the negotiated major after the ack.',
  },
  {
    code: 'UNKNOWN_MESSAGE_TYPE',
    category: 'message',
    retryable: false,
    fatal: 'never',
    meaning: 'The type is not in the catalogue of the negotiated version, or was sent in the wrong direction.',
  },
  {
    code: 'HANDSHAKE_REQUIRED',
    category: 'session',
    retryable: false,
    fatal: 'never',
    meaning: 'A message other than a handshake message, ping or error arrived before handshake.go; it had no effect.',
  },
  {
    code: 'MESSAGE_TOO_LARGE',
    category: 'message',
    retryable: false,
    fatal: 'never',
    meaning:
      'The message exceeds max_message_bytes; it had no effect. Also the error of a result, or of a handshake.ack, too large to send.',
  },
  {
    code: 'IDENTITY_MISMATCH',
    category: 'security',
    retryable: false,
    fatal: 'never',
    meaning: 'source or target does not match the identities bound by the handshake; the message had no effect.',
  },
  {
    code: 'INVALID_SIGNATURE',
    category: 'security',
    retryable: false,
    fatal: 'never',
    meaning:
      'Integrity is in force and the signature is missing, made with another key or wrong (a signature of the wrong shape is INVALID_MESSAGE), or the session_id does not match; no effect.',
  },
  {
    code: 'AUTH_REQUIRED',
    category: 'security',
    retryable: false,
    fatal: 'always',
    meaning: 'The handshake lacks credentials or a key the agent requires, or names an identity the key is not bound to.',
  },
  {
    code: 'UNKNOWN_TASK',
    category: 'task',
    retryable: false,
    fatal: 'never',
    meaning: 'No task with this task_id exists for this principal.',
  },
  {
    code: 'TASK_EXISTS',
    category: 'task',
    retryable: false,
    fatal: 'never',
    meaning: 'The task_id is already used by a different request of this principal.',
  },
  {
    code: 'TASK_TERMINAL',
    category: 'task',
    retryable: false,
    fatal: 'never',
    meaning: 'The task has already reached a terminal state (other than through a cancel).',
  },
  {
    code: 'INVALID_TRANSITION',
    category: 'task',
    retryable: false,
    fatal: 'never',
    meaning:
      'Sent by a requester about an agent stream message that implies a transition the state table does not allow (e.g. a state event after the result).',
  },
  {
    code: 'CAPABILITY_NOT_SUPPORTED',
    category: 'task',
    retryable: false,
    fatal: 'never',
    meaning: 'The agent does not offer the requested capability.',
  },
  {
    code: 'PERMISSION_DENIED',
    category: 'security',
    retryable: false,
    fatal: 'never',
    meaning: 'The task authorization lacks the permission the capability requires (details.required_permission), or is missing.',
  },
  { code: 'AUTHORIZATION_EXPIRED', category: 'security', retryable: false, fatal: 'never', meaning: 'The task authorization has expired.' },
  {
    code: 'IDEMPOTENCY_CONFLICT',
    category: 'task',
    retryable: false,
    fatal: 'never',
    meaning: 'The idempotency_key was used before with a different request.',
  },
  {
    code: 'DEADLINE_EXCEEDED',
    category: 'task',
    retryable: false,
    fatal: 'never',
    meaning:
      'The request arrived past its deadline, and no task was created; or, as the error of a timed_out result, the task passed its effective deadline.',
  },
  {
    code: 'BUSY',
    category: 'capacity',
    retryable: true,
    fatal: 'never',
    meaning: 'A concurrency cap (per session, per principal or per agent) is reached; retry later.',
  },
  {
    code: 'RATE_LIMITED',
    category: 'capacity',
    retryable: true,
    fatal: 'never',
    meaning: 'The sender is sending too fast; retry after details.retry_after_ms.',
  },
  {
    code: 'SHUTTING_DOWN',
    category: 'session',
    retryable: true,
    fatal: 'never',
    meaning: 'The agent is shutting down and starts no new work; also the error of tasks ended by shutdown.',
  },
  {
    code: 'PLAN_REJECTED',
    category: 'plan',
    retryable: false,
    fatal: 'never',
    meaning: 'The requester rejected the plan; the task ended failed.',
  },
  { code: 'INTERNAL_ERROR', category: 'internal', retryable: true, fatal: 'may', meaning: 'The sender failed for a reason of its own.' },
  {
    code: 'PROTOCOL_VIOLATION',
    category: 'session',
    retryable: false,
    fatal: 'may',
    meaning: 'A well-formed message at the wrong time or with the wrong content for the session state.',
  },
  {
    code: 'REPLAY_DETECTED',
    category: 'security',
    retryable: false,
    fatal: 'never',
    meaning: 'A signed, first-seen message whose timestamp lies outside the skew window.',
  },
  {
    code: 'RESUME_UNAVAILABLE',
    category: 'task',
    retryable: false,
    fatal: 'never',
    meaning: 'The messages asked for are no longer retained; details.earliest_sequence names the first retained one.',
  },
  {
    code: 'SESSION_LOST',
    category: 'session',
    retryable: true,
    fatal: 'never',
    meaning: 'The task ended because its session lost its transport and was not resumed in time.',
  },
  {
    code: 'MAX_ATTEMPTS',
    category: 'workspace',
    retryable: false,
    fatal: 'never',
    meaning: 'A workspace task was claimed max_attempts times without finishing; it is a dead letter.',
  },
  {
    code: 'CAPABILITY_FAILED',
    category: 'task',
    retryable: false,
    fatal: 'never',
    meaning:
      'The capability ran and reported that its work failed (the agent did not break): the error of a failed task. Retryable only when the capability says that the same request may succeed later.',
    since: '1.1',
  },
  {
    code: 'INVALID_CURSOR',
    category: 'task',
    retryable: false,
    fatal: 'never',
    meaning:
      'A task.list named a cursor that the agent did not give this principal for this filter, or can no longer read; list again without a cursor.',
    since: '1.1',
  },
  {
    code: 'EXTENSION_REQUIRED',
    category: 'session',
    retryable: false,
    fatal: 'never',
    meaning:
      'A handshake of 1.1 where one side requires an extension the other does not support or did not offer; details.missing lists those URIs, details.extensions the extensions of the agent. No session is created.',
    since: '1.1',
  },
  {
    code: 'INVALID_ANSWER',
    category: 'task',
    retryable: false,
    fatal: 'never',
    meaning:
      'The answer of an input.response does not match the schema of the request it answers; details.issues says where. The task still waits for an answer.',
    since: '1.1',
  },
  {
    code: 'DELEGATION_LOOP',
    category: 'task',
    retryable: false,
    fatal: 'never',
    meaning:
      "A task.request whose delegation lists the agent's own id (the task came back to it) or holds more agent ids than its limits.max_delegation_depth; details.delegation is the path, details.limit the limit exceeded. No task is created.",
    since: '1.1',
  },
] as const satisfies readonly ErrorCodeEntry[];

/** A code of the error registry. */
export type ErrorCodeName = (typeof ERROR_CODES)[number]['code'];

export type Direction = 'requester_to_agent' | 'agent_to_requester' | 'both';

export interface MessageEntry {
  type: string;
  direction: Direction;
  /** The direct reply types this message expects; empty when it expects none. */
  replies: readonly string[];
  /** May flow before handshake.go. */
  before_handshake: boolean;
  /** Carries task_id. */
  task: boolean;
  /** Carries sequence (part of a task's stream). */
  sequenced: boolean;
  /** reply_to: on every direct reply; on error whenever the offending message had a readable message_id. */
  reply_to: 'required' | 'optional' | 'absent';
  /** session_id: required from handshake.ready on; optional on what may flow before the session exists. */
  session_id: 'required' | 'optional';
  description: string;
  /** The version that added the type, when later than 1.0: sent only in a session of that version (spec: versioning#tap-1-1). */
  since?: string;
}

/** The message catalogue of TAP 1.0 (spec: messages#catalogue). */
export const MESSAGES = [
  {
    type: 'handshake.init',
    direction: 'requester_to_agent',
    replies: ['handshake.ack', 'error'],
    before_handshake: true,
    task: false,
    sequenced: false,
    reply_to: 'absent',
    session_id: 'optional',
    description: 'Opens a session: versions, the requester card, required capabilities, proposed params, credentials, resume.',
  },
  {
    type: 'handshake.ack',
    direction: 'agent_to_requester',
    replies: [],
    before_handshake: true,
    task: false,
    sequenced: false,
    reply_to: 'required',
    session_id: 'optional',
    description: 'The agent chooses the version, names the session, grants capabilities and fixes the final params.',
  },
  {
    type: 'handshake.ready',
    direction: 'requester_to_agent',
    replies: ['handshake.go', 'error'],
    before_handshake: true,
    task: false,
    sequenced: false,
    reply_to: 'absent',
    session_id: 'required',
    description: 'The requester confirms the final params.',
  },
  {
    type: 'handshake.go',
    direction: 'agent_to_requester',
    replies: [],
    before_handshake: true,
    task: false,
    sequenced: false,
    reply_to: 'required',
    session_id: 'required',
    description: 'The session is established.',
  },
  {
    type: 'ping',
    direction: 'both',
    replies: ['pong'],
    before_handshake: true,
    task: false,
    sequenced: false,
    reply_to: 'absent',
    session_id: 'optional',
    description: 'Liveness probe.',
  },
  {
    type: 'pong',
    direction: 'both',
    replies: [],
    before_handshake: true,
    task: false,
    sequenced: false,
    reply_to: 'required',
    session_id: 'optional',
    description: 'Answer to ping.',
  },
  {
    type: 'task.request',
    direction: 'requester_to_agent',
    replies: ['task.accepted', 'task.snapshot', 'error'],
    before_handshake: false,
    task: true,
    sequenced: false,
    reply_to: 'absent',
    session_id: 'required',
    description: 'Asks the agent to perform a capability.',
  },
  {
    type: 'task.accepted',
    direction: 'agent_to_requester',
    replies: [],
    before_handshake: false,
    task: true,
    sequenced: true,
    reply_to: 'required',
    session_id: 'required',
    description: 'The task exists; always sequence 1.',
  },
  {
    type: 'task.event',
    direction: 'agent_to_requester',
    replies: [],
    before_handshake: false,
    task: true,
    sequenced: true,
    reply_to: 'absent',
    session_id: 'required',
    description: 'A state change, progress, output or log line of a task.',
  },
  {
    type: 'task.result',
    direction: 'agent_to_requester',
    replies: [],
    before_handshake: false,
    task: true,
    sequenced: true,
    reply_to: 'absent',
    session_id: 'required',
    description: 'The one final message of a task.',
  },
  {
    type: 'task.cancel',
    direction: 'requester_to_agent',
    replies: ['task.snapshot', 'error'],
    before_handshake: false,
    task: true,
    sequenced: false,
    reply_to: 'absent',
    session_id: 'required',
    description: 'Asks the agent to cancel a task.',
  },
  {
    type: 'task.status',
    direction: 'requester_to_agent',
    replies: ['task.snapshot', 'error'],
    before_handshake: false,
    task: true,
    sequenced: false,
    reply_to: 'absent',
    session_id: 'required',
    description: 'Asks for a snapshot of a task.',
  },
  {
    type: 'task.snapshot',
    direction: 'agent_to_requester',
    replies: [],
    before_handshake: false,
    task: true,
    sequenced: false,
    reply_to: 'required',
    session_id: 'required',
    description: 'The task as it stands: the generic reply about a task.',
  },
  {
    type: 'task.resume',
    direction: 'requester_to_agent',
    replies: ['task.snapshot', 'error'],
    before_handshake: false,
    task: true,
    sequenced: false,
    reply_to: 'absent',
    session_id: 'required',
    description: 'Asks the agent to re-send every task message after last_sequence, then continue live.',
  },
  {
    type: 'plan.submit',
    direction: 'agent_to_requester',
    replies: [],
    before_handshake: false,
    task: true,
    sequenced: true,
    reply_to: 'absent',
    session_id: 'required',
    description: 'The agent submits a plan for approval; the task enters awaiting_approval.',
  },
  {
    type: 'plan.decision',
    direction: 'requester_to_agent',
    replies: ['task.snapshot', 'error'],
    before_handshake: false,
    task: true,
    sequenced: false,
    reply_to: 'absent',
    session_id: 'required',
    description: 'The requester approves, rejects or asks to revise a pending plan.',
  },
  {
    type: 'shutdown.request',
    direction: 'requester_to_agent',
    replies: ['shutdown.response', 'error'],
    before_handshake: false,
    task: false,
    sequenced: false,
    reply_to: 'absent',
    session_id: 'required',
    description: 'Asks the agent to end this session gracefully.',
  },
  {
    type: 'shutdown.response',
    direction: 'agent_to_requester',
    replies: [],
    before_handshake: false,
    task: false,
    sequenced: false,
    reply_to: 'required',
    session_id: 'required',
    description: 'Whether the agent approves the shutdown.',
  },
  {
    type: 'task.handoff',
    direction: 'agent_to_requester',
    replies: [],
    before_handshake: false,
    task: true,
    sequenced: true,
    reply_to: 'absent',
    session_id: 'required',
    description: 'The checkpoint of an unfinished task, sent at shutdown before its result.',
  },
  {
    type: 'session.farewell',
    direction: 'both',
    replies: [],
    before_handshake: false,
    task: false,
    sequenced: false,
    reply_to: 'absent',
    session_id: 'required',
    description: 'The last message of a session from its sender.',
  },
  {
    type: 'error',
    direction: 'both',
    replies: [],
    before_handshake: true,
    task: false,
    sequenced: false,
    reply_to: 'optional',
    session_id: 'optional',
    description: 'A structured error; never answered.',
  },
  {
    type: 'task.list',
    direction: 'requester_to_agent',
    replies: ['task.page', 'error'],
    before_handshake: false,
    task: false,
    sequenced: false,
    reply_to: 'absent',
    session_id: 'required',
    description: "Asks for a page of the tasks of the session's principal, filtered by state and capability.",
    since: '1.1',
  },
  {
    type: 'task.page',
    direction: 'agent_to_requester',
    replies: [],
    before_handshake: false,
    task: false,
    sequenced: false,
    reply_to: 'required',
    session_id: 'required',
    description: 'One page of task summaries, with the cursor of the next page when more may follow.',
    since: '1.1',
  },
  {
    type: 'input.request',
    direction: 'agent_to_requester',
    replies: [],
    before_handshake: false,
    task: true,
    sequenced: true,
    reply_to: 'absent',
    session_id: 'required',
    description: 'The agent asks its requester for a value the task needs: a prompt and the JSON Schema of the answer.',
    since: '1.1',
  },
  {
    type: 'input.response',
    direction: 'requester_to_agent',
    replies: ['task.snapshot', 'error'],
    before_handshake: false,
    task: true,
    sequenced: false,
    reply_to: 'absent',
    session_id: 'required',
    description: 'The requester answers the pending input request of a task.',
    since: '1.1',
  },
] as const satisfies readonly MessageEntry[];
