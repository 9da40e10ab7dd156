/**
 * The mapping of a TAP agent onto MCP, as pure functions: capability → tool, arguments → input,
 * task.event → MCP notification, task.result or a refusal → tool result or JSON-RPC error, input
 * request and plan → elicitation, MCP `_meta.traceparent` → TAP trace context
 * (spec: bridge-mcp-host). The facade (mcp-host.ts) and the fixtures of fixtures/bridges/mcp-host
 * both go through these, so the table in the spec and the code cannot drift apart.
 */
import type { Capability } from '../../schemas/src/index.ts';

/** A TAP error payload, as far as the mapping reads it. */
export interface ErrorPayload {
  code: string;
  message: string;
  retryable: boolean;
  details?: Record<string, unknown>;
}

/** An MCP tool as tools/list gives it. */
export interface McpTool {
  name: string;
  title?: string;
  description: string;
  inputSchema: { type: 'object'; [k: string]: unknown };
  annotations: { title?: string; readOnlyHint: boolean; destructiveHint: boolean; idempotentHint: boolean; openWorldHint: boolean };
  /** Whether a host may call the tool as an MCP task: every tool may, none must (spec: bridge-mcp-host#mcp-tasks). */
  execution: { taskSupport: 'optional' };
  _meta: Record<string, unknown>;
}

/** An MCP tool result (CallToolResult). */
export interface McpToolResult {
  content: Array<{ type: 'text'; text: string }>;
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
  _meta?: Record<string, unknown>;
}

/** What a tools/call turns into when it cannot be a tool result: a JSON-RPC error. */
export interface McpRpcError {
  code: number;
  message: string;
  data?: unknown;
}

/** The key of the facade's own members in MCP `_meta` (spec: bridge-mcp-host#tools). */
export const META = 'tap/bridge';

/** JSON-RPC error codes of MCP (and JSON-RPC 2.0). */
export const RPC = { INVALID_PARAMS: -32602, INTERNAL_ERROR: -32603, REQUEST_TIMEOUT: -32001 } as const;

/** True for a JSON Schema that describes an object (what MCP needs as a tool's inputSchema). */
function isObjectSchema(schema: unknown): schema is { type: 'object' } {
  return typeof schema === 'object' && schema !== null && (schema as { type?: unknown }).type === 'object';
}

/**
 * The tool of a capability (spec: bridge-mcp-host#tools): same name, its description, and as input
 * schema the card's input_schema when it describes an object, else an object whose one member
 * `input` is the task input (`_meta["tap/bridge"].input` says which).
 */
export function toolOf(capability: Capability): McpTool {
  const wrapped = !isObjectSchema(capability.input_schema);
  const inputSchema = wrapped
    ? {
        type: 'object' as const,
        properties: { input: capability.input_schema ?? { description: 'The task input, any JSON value.' } },
        required: ['input'],
      }
    : (capability.input_schema as McpTool['inputSchema']);
  return {
    name: capability.name,
    description: capability.description,
    inputSchema,
    annotations: {
      title: capability.name,
      readOnlyHint: !capability.side_effects,
      destructiveHint: capability.side_effects,
      idempotentHint: !capability.side_effects,
      openWorldHint: capability.side_effects,
    },
    execution: { taskSupport: 'optional' },
    _meta: { [META]: { version: capability.version, input: wrapped ? 'wrapped' : 'arguments', streaming: capability.streaming } },
  };
}

/** The task input of a tools/call's arguments: `arguments.input` for a wrapped tool, else the arguments themselves. */
export function inputOf(tool: McpTool, args: Record<string, unknown> | undefined): unknown {
  const wrapped = (tool._meta[META] as { input: string }).input === 'wrapped';
  return wrapped ? (args?.input ?? null) : (args ?? {});
}

/** The trace context a tools/call carries in `_meta` (traceparent, tracestate, baggage), as TAP envelope metadata (spec: bridge-mcp-host#trace). */
export function traceOf(meta: Record<string, unknown> | undefined): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  for (const k of ['traceparent', 'tracestate', 'baggage']) if (typeof meta?.[k] === 'string') out[k] = meta[k] as string;
  return Object.keys(out).length > 0 ? out : undefined;
}

/** A TAP task.event payload, as far as the mapping reads it. */
export interface TapEvent {
  kind: 'state' | 'progress' | 'output' | 'log';
  state?: string;
  percent?: number;
  stage?: string;
  message?: string;
  level?: 'debug' | 'info' | 'warn' | 'error';
  data?: unknown;
}

/** An MCP notification the facade sends for a task event. */
export type McpNotification =
  | { method: 'notifications/progress'; params: { progressToken: string | number; progress: number; total?: number; message?: string } }
  | { method: 'notifications/message'; params: { level: 'debug' | 'info' | 'warning' | 'error'; logger: string; data: unknown } };

/** The text of a progress notification for an event: its message, stage, percent, state or output. */
function progressText(event: TapEvent): string {
  if (event.kind === 'state') return `state: ${event.state}`;
  if (event.kind === 'output') return `output: ${JSON.stringify(event.data)}`;
  const parts = [event.stage, event.message, event.percent === undefined ? undefined : `${event.percent}%`];
  return parts.filter((p) => p !== undefined).join(' — ');
}

/**
 * The notification of a task event (spec: bridge-mcp-host#events): a log event is a logging
 * message; any other is a progress notification whose `progress` is the event's TAP sequence
 * (strictly increasing, as MCP asks), sent only when the call gave a progressToken.
 */
export function notificationOf(
  event: TapEvent,
  sequence: number,
  capability: string,
  progressToken: string | number | undefined,
): McpNotification | undefined {
  if (event.kind === 'log') {
    const level = event.level === 'warn' ? 'warning' : (event.level ?? 'info');
    return { method: 'notifications/message', params: { level, logger: capability, data: event.message } };
  }
  if (progressToken === undefined) return undefined;
  const params: { progressToken: string | number; progress: number; total?: number; message?: string } = {
    progressToken,
    progress: sequence,
  };
  const text = progressText(event);
  if (text !== '') params.message = text;
  return { method: 'notifications/progress', params };
}

/** A TAP task.result payload, as far as the mapping reads it. */
export interface TapResult {
  status: 'completed' | 'failed' | 'cancelled' | 'timed_out';
  output?: unknown;
  error?: ErrorPayload;
}

/** The text of an error for a model to read: its code and message. */
function errorText(error: ErrorPayload): string {
  return `${error.code}: ${error.message}`;
}

/**
 * The tool result of a task's result (spec: bridge-mcp-host#results): completed gives its output
 * as JSON text (and as structuredContent when it is an object); failed, timed_out and cancelled
 * give isError with the TAP error's code and message, the error itself in `_meta`.
 */
export function toolResultOf(result: TapResult, taskId: string): McpToolResult {
  const meta = { [META]: { task_id: taskId, status: result.status } };
  if (result.status === 'completed') {
    const out: McpToolResult = { content: [{ type: 'text', text: JSON.stringify(result.output ?? null) }], _meta: meta };
    if (typeof result.output === 'object' && result.output !== null && !Array.isArray(result.output))
      out.structuredContent = result.output as Record<string, unknown>;
    return out;
  }
  const error: ErrorPayload = result.error ?? {
    code: result.status === 'timed_out' ? 'DEADLINE_EXCEEDED' : 'INTERNAL_ERROR',
    message: `the task ended ${result.status}`,
    retryable: false,
  };
  return { content: [{ type: 'text', text: errorText(error) }], isError: true, _meta: { [META]: { ...meta[META], error } } };
}

/** Refusals of task.request that are the caller's mistake about the tool itself: a JSON-RPC error, not a tool result. */
const RPC_REFUSALS: Readonly<Record<string, number>> = { CAPABILITY_NOT_SUPPORTED: RPC.INVALID_PARAMS };

/** Failures of the bridge's own session with the agent: no tool result can say what happened to the work. */
const SESSION_FAILURES = new Set(['SESSION_LOST', 'RESUME_UNAVAILABLE', 'CLOSED', 'REQUEST_TIMEOUT', 'HANDSHAKE_FAILED']);

/**
 * A tools/call the agent refused, or whose session failed (spec: bridge-mcp-host#errors): an unknown
 * capability is JSON-RPC -32602, a lost session -32603 (the work's outcome unknown); any other
 * refusal (INVALID_MESSAGE, PERMISSION_DENIED, BUSY, RATE_LIMITED, ...) a tool result with isError,
 * so the model can read it and correct or retry.
 */
export function refusalOf(code: string, message: string, retryable: boolean): { rpc: McpRpcError } | { result: McpToolResult } {
  const rpcCode = RPC_REFUSALS[code];
  if (rpcCode !== undefined) return { rpc: { code: rpcCode, message: `${code}: ${message}`, data: { code } } };
  if (SESSION_FAILURES.has(code))
    return { rpc: { code: RPC.INTERNAL_ERROR, message: `${code}: ${message} (the task's outcome is unknown)`, data: { code } } };
  const error = { code, message, retryable };
  return { result: { content: [{ type: 'text', text: errorText(error) }], isError: true, _meta: { [META]: { error } } } };
}

/** The status of an MCP task (MCP 2025-11-25). */
export type McpTaskStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';

/**
 * The MCP task status of each TAP task state (spec: bridge-mcp-host#mcp-tasks): a task at work,
 * being cancelled or waiting for a plan's approval is working; timed_out is failed.
 */
export const MCP_TASK_STATUS_OF: Readonly<Record<string, McpTaskStatus>> = {
  accepted: 'working',
  running: 'working',
  cancelling: 'working',
  awaiting_approval: 'working',
  input_required: 'input_required',
  completed: 'completed',
  failed: 'failed',
  timed_out: 'failed',
  cancelled: 'cancelled',
};

/** The primitive JSON Schema types MCP elicitation accepts as a property. */
const PRIMITIVE_TYPES = new Set(['string', 'number', 'integer', 'boolean']);

function isPrimitiveSchema(schema: unknown): boolean {
  return typeof schema === 'object' && schema !== null && PRIMITIVE_TYPES.has((schema as { type?: unknown }).type as string);
}

/** The elicitation of an input request, and how to read its answer back; undefined when MCP cannot ask for that schema. */
export interface Elicitation {
  params: { message: string; requestedSchema: { type: 'object'; properties: Record<string, unknown>; required?: string[] } };
  /** The TAP answer of an accepted elicitation's content. */
  answerOf(content: Record<string, unknown> | undefined): unknown;
}

/**
 * The elicitation/create of an input request (spec: bridge-mcp-host#input): an object schema of
 * primitive properties is asked as is; a primitive schema as the one property `answer`; any other
 * schema cannot be elicited (MCP asks for flat objects only) and the task is cancelled.
 */
export function elicitationOf(request: { prompt: string; schema: unknown }): Elicitation | undefined {
  const schema = request.schema as { type?: unknown; properties?: Record<string, unknown>; required?: string[] };
  if (schema.type === 'object' && Object.values(schema.properties ?? {}).every(isPrimitiveSchema)) {
    const requestedSchema: Elicitation['params']['requestedSchema'] = { type: 'object', properties: schema.properties ?? {} };
    if (schema.required !== undefined) requestedSchema.required = schema.required;
    return { params: { message: request.prompt, requestedSchema }, answerOf: (content) => content ?? {} };
  }
  if (isPrimitiveSchema(schema))
    return {
      params: { message: request.prompt, requestedSchema: { type: 'object', properties: { answer: schema }, required: ['answer'] } },
      answerOf: (content) => content?.answer,
    };
  return undefined;
}

/** The elicitation of a plan waiting for approval (spec: bridge-mcp-host#plans): its intent, risk and steps, and a decision. */
export function planElicitationOf(plan: {
  intent: string;
  risk_level: string;
  steps: Array<{ action: string; target: string; reversible: boolean }>;
}): Elicitation['params'] {
  const steps = plan.steps.map((s, i) => `${i + 1}. ${s.action} ${s.target}${s.reversible ? '' : ' (irreversible)'}`).join('\n');
  return {
    message: `Approve this plan (risk ${plan.risk_level})? ${plan.intent}\n${steps}`,
    requestedSchema: {
      type: 'object',
      properties: {
        decision: {
          type: 'string',
          enum: ['approved', 'rejected'],
          description: 'approved runs the plan; rejected ends the task PLAN_REJECTED',
        },
        feedback: { type: 'string', description: 'Why (optional).' },
      },
      required: ['decision'],
    },
  };
}

/** The TAP plan decision of an elicitation's outcome: only an accepted "approved" approves; decline and cancel reject. */
export function planDecisionOf(outcome: { action: string; content?: Record<string, unknown> }): {
  decision: 'approved' | 'rejected';
  feedback?: string;
} {
  if (outcome.action === 'accept' && outcome.content?.decision === 'approved') return { decision: 'approved' };
  const feedback = typeof outcome.content?.feedback === 'string' ? outcome.content.feedback : `the MCP user chose ${outcome.action}`;
  return { decision: 'rejected', feedback };
}
