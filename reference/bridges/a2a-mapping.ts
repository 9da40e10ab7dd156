/**
 * The mapping of a TAP agent onto A2A (protocol 1.0, as @a2a-js/sdk 1.3 models it), as pure
 * functions: TAP card → A2A agent card, A2A message → capability and input, TAP state → A2A
 * state, each message of a TAP task stream → A2A stream events, and the answers of an
 * interrupted task (spec: bridge-a2a). The facade (a2a-server.ts) and the fixtures of
 * fixtures/bridges/a2a both go through these.
 */
import type { AgentCard as A2aCard, Message, Part, StreamResponse, Task } from '@a2a-js/sdk';
import type { AgentCard as TapCard, PayloadOf, TaskState } from '../../schemas/src/index.ts';

/** A2A task states, the numbers of the A2A 1.0 protocol's TaskState (lf.a2a.v1). */
export const A2A_STATE = {
  SUBMITTED: 1,
  WORKING: 2,
  COMPLETED: 3,
  FAILED: 4,
  CANCELED: 5,
  INPUT_REQUIRED: 6,
  REJECTED: 7,
  AUTH_REQUIRED: 8,
} as const;
export type A2aState = (typeof A2A_STATE)[keyof typeof A2A_STATE];

/** The A2A role of the agent's messages (lf.a2a.v1 Role.ROLE_AGENT). */
const ROLE_AGENT = 2;

/** The metadata keys the facade adds to A2A objects (spec: bridge-a2a#metadata). */
export const KEY = {
  sequence: 'tap/sequence',
  type: 'tap/type',
  taskId: 'tap/task_id',
  capability: 'tap/capability',
  error: 'tap/error',
  lastSequence: 'tap-last-sequence',
} as const;

/** The A2A state of a TAP state (spec: bridge-a2a#states); `refused` is a task.request answered with an error. */
export const STATE_OF: Readonly<Record<string, A2aState>> = {
  accepted: A2A_STATE.SUBMITTED,
  running: A2A_STATE.WORKING,
  cancelling: A2A_STATE.WORKING,
  input_required: A2A_STATE.INPUT_REQUIRED,
  awaiting_approval: A2A_STATE.AUTH_REQUIRED,
  completed: A2A_STATE.COMPLETED,
  failed: A2A_STATE.FAILED,
  timed_out: A2A_STATE.FAILED,
  cancelled: A2A_STATE.CANCELED,
  refused: A2A_STATE.REJECTED,
};

/** True for the A2A states a task never leaves. */
export function isTerminal(state: A2aState | undefined): boolean {
  return state === A2A_STATE.COMPLETED || state === A2A_STATE.FAILED || state === A2A_STATE.CANCELED || state === A2A_STATE.REJECTED;
}

/** True for the states in which the task waits for a message of its client. */
export function isInterrupted(state: A2aState | undefined): boolean {
  return state === A2A_STATE.INPUT_REQUIRED || state === A2A_STATE.AUTH_REQUIRED;
}

/** The A2A agent card of a TAP card served at `url` (spec: bridge-a2a#card): one skill per capability. */
export function agentCardOf(card: TapCard, url: string): A2aCard {
  return {
    name: card.name,
    description: card.description,
    supportedInterfaces: [
      { url, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' },
      { url, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '0.3' },
    ],
    provider: undefined,
    version: '1.0.0',
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['application/json', 'text/plain'],
    defaultOutputModes: ['application/json'],
    skills: card.capabilities.map((c) => ({
      id: c.name,
      name: c.name,
      description: c.description,
      tags: [`version:${c.version}`, c.side_effects ? 'side-effects' : 'no-side-effects', ...(c.streaming ? ['streaming'] : [])],
      examples: [],
      inputModes: ['application/json', 'text/plain'],
      outputModes: ['application/json'],
      securityRequirements: [],
    })),
    signatures: [],
  };
}

/** A part of DataPart content. */
export function dataPart(value: unknown): Part {
  return { content: { $case: 'data', value }, metadata: undefined, filename: '', mediaType: 'application/json' };
}

/** A part of text content. */
export function textPart(value: string): Part {
  return { content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: 'text/plain' };
}

/** The value a message carries: its first DataPart's value, else its text (parsed as JSON when it is JSON), else null. */
export function messageValue(message: Pick<Message, 'parts'>): unknown {
  for (const p of message.parts) if (p.content?.$case === 'data') return p.content.value;
  const text = message.parts.flatMap((p) => (p.content?.$case === 'text' ? [p.content.value] : [])).join('');
  if (text === '') return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** What a new message asks for: the capability and its input, or why it names none. */
export type Target = { capability: string; input: unknown } | { problem: string };

/**
 * The capability and input of a message that starts a task (spec: bridge-a2a#capability): a
 * DataPart `{ capability, input }` naming a capability of the card; else `metadata["tap/capability"]`
 * (of the message or of the request) with the message's value as input; else, when the card has
 * exactly one capability, that one with the message's value.
 */
export function targetOf(message: Pick<Message, 'parts' | 'metadata'>, card: TapCard, requestMetadata?: Record<string, unknown>): Target {
  const names = new Set(card.capabilities.map((c) => c.name));
  const known = (name: string): Target =>
    names.has(name)
      ? { capability: name, input: null }
      : { problem: `the agent has no capability ${name}; its card lists ${[...names].join(', ')}` };
  for (const p of message.parts) {
    const v = p.content?.$case === 'data' ? (p.content.value as { capability?: unknown; input?: unknown } | null) : null;
    if (typeof v?.capability === 'string') {
      const t = known(v.capability);
      return 'problem' in t ? t : { capability: v.capability, input: v.input ?? null };
    }
  }
  const named = message.metadata?.[KEY.capability] ?? requestMetadata?.[KEY.capability];
  if (typeof named === 'string') {
    const t = known(named);
    return 'problem' in t ? t : { capability: named, input: messageValue(message) };
  }
  const [only] = names;
  if (names.size === 1 && only !== undefined) return { capability: only, input: messageValue(message) };
  return {
    problem: `the message names no capability: send a DataPart { "capability": "<name>", "input": ... } or metadata "${KEY.capability}"; the agent offers ${[...names].join(', ')}`,
  };
}

/** The trace context an A2A request carries in its metadata (message's, then request's): traceparent, tracestate, baggage (spec: bridge-a2a#trace). */
export function traceOf(...metadata: Array<Record<string, unknown> | undefined>): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  for (const m of metadata)
    for (const k of ['traceparent', 'tracestate', 'baggage'])
      if (out[k] === undefined && typeof m?.[k] === 'string') out[k] = m[k] as string;
  return Object.keys(out).length > 0 ? out : undefined;
}

/** A message of a TAP task stream, as far as the mapping reads it. */
export interface TapStreamMessage {
  type: string;
  task_id?: string;
  sequence?: number;
  payload: Record<string, unknown>;
}

/** Where the A2A events of a task go: its A2A id and context. */
export interface TaskRef {
  id: string;
  contextId: string;
}

function agentMessage(ref: TaskRef, id: string, parts: Part[]): Message {
  return {
    messageId: id,
    contextId: ref.contextId,
    taskId: ref.id,
    role: ROLE_AGENT,
    parts,
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

function status(ref: TaskRef, state: A2aState, meta: Record<string, unknown>, parts: Part[] = []): StreamResponse {
  const message = parts.length === 0 ? undefined : agentMessage(ref, `${ref.id}-${String(meta[KEY.sequence])}`, parts);
  return {
    payload: {
      $case: 'statusUpdate',
      value: { taskId: ref.id, contextId: ref.contextId, status: { state, message, timestamp: undefined }, metadata: meta },
    },
  };
}

function artifact(
  ref: TaskRef,
  artifactId: string,
  name: string,
  value: unknown,
  lastChunk: boolean,
  meta: Record<string, unknown>,
): StreamResponse {
  return {
    payload: {
      $case: 'artifactUpdate',
      value: {
        taskId: ref.id,
        contextId: ref.contextId,
        artifact: { artifactId, name, description: '', parts: [dataPart(value)], metadata: undefined, extensions: [] },
        append: false,
        lastChunk,
        metadata: meta,
      },
    },
  };
}

/**
 * The A2A stream events of one TAP stream message (spec: bridge-a2a#events): each carries the TAP
 * sequence and type in its metadata, so a client that reconnects can say what it has. A task the
 * facade cancelled itself ends with `cancelledBecause` as its status text (spec: bridge-a2a#mesh).
 */
export function eventsOf(m: TapStreamMessage, ref: TaskRef, cancelledBecause?: string): StreamResponse[] {
  const meta: Record<string, unknown> = { [KEY.sequence]: m.sequence ?? 0, [KEY.type]: m.type };
  if (m.task_id !== undefined && m.task_id !== ref.id) meta[KEY.taskId] = m.task_id;
  const p = m.payload;
  switch (m.type) {
    case 'task.accepted':
      return [status(ref, A2A_STATE.SUBMITTED, meta)];
    case 'task.event':
      // input_required is announced by the input.request that follows it, with its question (spec: tasks#input-required).
      if (p.kind === 'state' && p.state === 'input_required') return [];
      if (p.kind === 'state') return [status(ref, STATE_OF[p.state as string] ?? A2A_STATE.WORKING, meta)];
      if (p.kind === 'output') return [artifact(ref, `output-${String(m.sequence)}`, 'output', p.data, false, meta)];
      return [status(ref, A2A_STATE.WORKING, meta, [dataPart({ kind: p.kind, ...p })])];
    case 'plan.submit':
      return [
        status(ref, A2A_STATE.AUTH_REQUIRED, meta, [textPart(`Approve this plan? ${(p.plan as { intent: string }).intent}`), dataPart(p)]),
      ];
    case 'input.request':
      return [
        status(ref, A2A_STATE.INPUT_REQUIRED, meta, [textPart(String(p.prompt)), dataPart({ request_id: p.request_id, schema: p.schema })]),
      ];
    case 'task.result': {
      const state = STATE_OF[p.status as string] ?? A2A_STATE.FAILED;
      if (state === A2A_STATE.COMPLETED) return [artifact(ref, 'result', 'result', p.output ?? null, true, meta), status(ref, state, meta)];
      const error = p.error as { code: string; message: string } | undefined;
      const why = state === A2A_STATE.CANCELED && cancelledBecause !== undefined ? [textPart(`cancelled: ${cancelledBecause}`)] : [];
      const parts = error === undefined ? why : [textPart(`${error.code}: ${error.message}`), dataPart({ error })];
      return [status(ref, state, error === undefined ? meta : { ...meta, [KEY.error]: error.code }, parts)];
    }
    default:
      return [];
  }
}

/** The A2A event of a task.request the agent refused (spec: bridge-a2a#errors): REJECTED, with the TAP error. */
export function refusedOf(ref: TaskRef, error: { code: string; message: string }): StreamResponse {
  return status(ref, A2A_STATE.REJECTED, { [KEY.sequence]: 0, [KEY.type]: 'error', [KEY.error]: error.code }, [
    textPart(`${error.code}: ${error.message}`),
    dataPart({ error }),
  ]);
}

/** The TAP plan decision of a message answering a plan: a DataPart { decision, feedback? } or the text "approved" / "rejected". */
export function decisionOf(
  message: Pick<Message, 'parts'>,
): { decision: 'approved' | 'rejected' | 'needs_revision'; feedback?: string } | undefined {
  const v = messageValue(message);
  const d = typeof v === 'string' ? { decision: v } : (v as { decision?: unknown; feedback?: unknown } | null);
  if (d?.decision !== 'approved' && d?.decision !== 'rejected' && d?.decision !== 'needs_revision') return undefined;
  return typeof d.feedback === 'string' ? { decision: d.decision, feedback: d.feedback } : { decision: d.decision };
}

/** Applies a stream event to the A2A task it belongs to: its status, its artifacts (spec: bridge-a2a#tasks). */
export function applyEvent(task: Task, event: StreamResponse): void {
  const p = event.payload;
  if (p?.$case === 'statusUpdate' && p.value.status !== undefined) {
    task.status = p.value.status;
    if (p.value.status.message !== undefined) task.history.push(p.value.status.message);
  } else if (p?.$case === 'artifactUpdate' && p.value.artifact !== undefined) {
    task.artifacts.push(p.value.artifact);
  }
}

/** One task of a TAP `task.page`, as the listing rows read it. */
export type TapTaskSummary = PayloadOf<'task.page'>['tasks'][number];

/**
 * The `task.list` filter of a ListTasks `status` (spec: bridge-a2a#list): TAP's own `state` when
 * one TAP state maps to the A2A state, else the TAP states the facade keeps from unfiltered pages;
 * nothing for no status (0, unspecified).
 */
export function listFilterOf(status: A2aState | undefined): { state?: TaskState; keep?: TaskState[] } {
  if (!status) return {};
  const states = Object.keys(STATE_OF).filter((s) => s !== 'refused' && STATE_OF[s] === status) as TaskState[];
  return states.length === 1 ? { state: states[0]! } : { keep: states };
}

/** A listed task the facade no longer holds, from its TAP summary (spec: bridge-a2a#list). */
export function listedTaskOf(t: TapTaskSummary): Task {
  return {
    id: t.task_id,
    contextId: '',
    status: { state: STATE_OF[t.state] ?? A2A_STATE.WORKING, message: undefined, timestamp: t.updated_at },
    artifacts: [],
    history: [],
    metadata: { [KEY.capability]: t.capability, [KEY.sequence]: t.last_sequence },
  };
}
