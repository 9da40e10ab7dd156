/**
 * The normative mapping of an MCP server onto a TAP agent, as pure functions of MCP values
 * (spec: bridge-mcp-server). The bridge (mcp-agent.ts) applies them; the fixtures of
 * fixtures/bridges/mcp-server/ replay them, so a second bridge can be held to the same answers.
 */
import type { Capability } from '../../schemas/src/index.ts';
import { anyErrorPayload, type ErrorPayload } from '../core/index.ts';
import type { PlanDraft } from '../agent/index.ts';

/** An MCP tool as tools/list describes it (the members the mapping reads). */
export interface McpTool {
  name: string;
  title?: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
  annotations?: { title?: string; readOnlyHint?: boolean; destructiveHint?: boolean; idempotentHint?: boolean; openWorldHint?: boolean };
  execution?: { taskSupport?: string };
}

/** The server's implementation info from the initialize result. */
export interface McpServerInfo {
  name: string;
  version: string;
  title?: string;
}

/** A tools/call result (the members the mapping reads). */
export interface McpCallResult {
  content?: unknown[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

/** Which tools go through a plan approval before they run (spec: bridge-mcp-server#plans). */
export type PlanMode = 'destructive' | 'all' | 'none';
export const PLAN_MODES: readonly PlanMode[] = ['destructive', 'all', 'none'];

/** The prefix of every capability a bridged tool becomes. */
export const CAPABILITY_PREFIX = 'mcp.';

const CAPABILITY_NAME = /^[a-z][a-z0-9_-]*(\.[a-z][a-z0-9_-]*)+$/;

/**
 * The capability name of an MCP tool, or undefined when it has none: "mcp." and the tool's name,
 * a capital letter after a small one or a digit written as "-" and the small letter, any other
 * capital in small, and every character other than a-z, 0-9, "_", "-" and "." as "-"
 * (spec: bridge-mcp-server#tools).
 */
export function capabilityName(tool: string): string | undefined {
  const lowered = tool
    .replace(/([a-z0-9])([A-Z])/g, '$1-$2')
    .toLowerCase()
    .replace(/[^a-z0-9_.-]/g, '-');
  const name = CAPABILITY_PREFIX + lowered;
  return name.length <= 128 && CAPABILITY_NAME.test(name) ? name : undefined;
}

/** A single line of at most `max` characters. */
function line(text: string, max: number): string {
  const flat = text.replace(/[\r\n]+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}

/** True unless the tool says it only reads: MCP's defaults make a tool without hints destructive (spec: bridge-mcp-server#plans). */
export function isDestructive(tool: McpTool): boolean {
  const hints = tool.annotations ?? {};
  return hints.readOnlyHint !== true && hints.destructiveHint !== false;
}

/** True when a call of `tool` waits for an approved plan under `mode`. */
export function planNeeded(tool: McpTool, mode: PlanMode): boolean {
  return mode === 'all' || (mode === 'destructive' && isDestructive(tool));
}

/** The capability of a tool, or why the tool is not offered (spec: bridge-mcp-server#tools). */
export function toolCapability(tool: McpTool, server: McpServerInfo): { capability: Capability } | { skipped: string } {
  const name = capabilityName(tool.name);
  if (name === undefined) return { skipped: `its name "${tool.name}" has no TAP capability name` };
  if (tool.execution?.taskSupport === 'required') return { skipped: 'it runs only as an MCP task (taskSupport "required")' };
  const { $schema: _dialect, ...inputSchema } = tool.inputSchema;
  const version = line(server.version, 64);
  return {
    capability: {
      name,
      version: version === '' ? '0.0.0' : version,
      description: line(tool.description ?? tool.title ?? tool.annotations?.title ?? `The MCP tool ${tool.name}.`, 4096),
      input_formats: ['json'],
      output_formats: ['json'],
      streaming: false,
      side_effects: tool.annotations?.readOnlyHint !== true,
      input_schema: inputSchema,
    },
  };
}

/**
 * The capabilities of a server's tools, in the order tools/list gave them: each tool that maps,
 * unless an earlier tool took its capability name; and the tools left out, each with why.
 */
export function capabilitiesOf(
  tools: readonly McpTool[],
  server: McpServerInfo,
): { offered: { tool: McpTool; capability: Capability }[]; skipped: { tool: string; why: string }[] } {
  const offered: { tool: McpTool; capability: Capability }[] = [];
  const skipped: { tool: string; why: string }[] = [];
  const taken = new Set<string>();
  for (const tool of tools) {
    const mapped = toolCapability(tool, server);
    if ('skipped' in mapped) skipped.push({ tool: tool.name, why: mapped.skipped });
    else if (taken.has(mapped.capability.name))
      skipped.push({ tool: tool.name, why: `its capability name ${mapped.capability.name} is taken by another tool` });
    else {
      taken.add(mapped.capability.name);
      offered.push({ tool, capability: mapped.capability });
    }
  }
  return { offered, skipped };
}

/** The tools/call request of a task: the tool's own name, the task's input as its arguments (spec: bridge-mcp-server#tools). */
export function callOf(
  tool: string,
  input: unknown,
): { method: 'tools/call'; params: { name: string; arguments: Record<string, unknown> } } {
  const args = typeof input === 'object' && input !== null && !Array.isArray(input) ? (input as Record<string, unknown>) : {};
  return { method: 'tools/call', params: { name: tool, arguments: args } };
}

/** The plan a call waits on: one irreversible step, the call itself (spec: bridge-mcp-server#plans). */
export function planFor(tool: McpTool, args: unknown): PlanDraft {
  const destructive = isDestructive(tool);
  return {
    intent: line(`Call the MCP tool ${tool.name}${destructive ? ', which may change or delete data' : ''}.`, 8192),
    steps: [
      {
        action: line(`tools/call ${tool.name}`, 1024),
        target: line(JSON.stringify(args ?? {}), 2048),
        expected_output: 'The tool result: its content and structured content.',
        reversible: false,
      },
    ],
    rollback: 'None: the bridge cannot undo a tool call.',
    estimated_cost: {},
    risk_level: destructive ? 'high' : 'medium',
  };
}

/** The output of a successful call: its content, and its structured content when it has one (spec: bridge-mcp-server#output). */
export function outputOf(result: McpCallResult): { content: unknown[]; structuredContent?: Record<string, unknown> } {
  const output: { content: unknown[]; structuredContent?: Record<string, unknown> } = { content: result.content ?? [] };
  if (result.structuredContent !== undefined) output.structuredContent = result.structuredContent;
  return output;
}

/**
 * The capability's own failure of a result with isError: its message the text of its text
 * blocks, its details the result's content and structured content (spec: bridge-mcp-server#is-error).
 */
export function failureOf(result: McpCallResult): { message: string; details: Record<string, unknown> } | undefined {
  if (result.isError !== true) return undefined;
  const texts = (result.content ?? [])
    .filter(
      (b): b is { type: 'text'; text: string } =>
        (b as { type?: unknown }).type === 'text' && typeof (b as { text?: unknown }).text === 'string',
    )
    .map((b) => b.text);
  const message = line(texts.join(' '), 4096);
  return { message: message === '' ? 'the tool reported an error' : message, details: outputOf(result) };
}

/**
 * The task.result payload of a call's result in a session of `version`: completed with its
 * output, or failed with the capability's own failure, which a session of 1.0 carries as
 * INTERNAL_ERROR (spec: bridge-mcp-server#output, bridge-mcp-server#is-error). The agent runtime
 * makes the same result from the bridge's CapabilityError.
 */
export function taskResultOf(
  result: McpCallResult,
  version: string,
): { status: 'completed'; output: unknown } | { status: 'failed'; error: ErrorPayload } {
  const failure = failureOf(result);
  if (!failure) return { status: 'completed', output: outputOf(result) };
  const code = version === '1.0' ? 'INTERNAL_ERROR' : 'CAPABILITY_FAILED';
  return { status: 'failed', error: anyErrorPayload(code, failure.message, failure.details, { retryable: false }) };
}

/** The progress event of a notifications/progress (spec: bridge-mcp-server#progress). */
export function progressOf(params: { progress: number; total?: number; message?: string }): {
  percent?: number;
  message?: string;
} {
  const event: { percent?: number; message?: string } = {};
  if (typeof params.total === 'number' && params.total > 0)
    event.percent = Math.min(100, Math.max(0, Math.round((params.progress / params.total) * 10_000) / 100));
  if (typeof params.message === 'string' && params.message !== '') event.message = line(params.message, 65_536);
  if (event.percent === undefined && event.message === undefined) event.message = String(params.progress);
  return event;
}

/** The notifications/cancelled the bridge sends for a TAP cancel of the call with `requestId` (spec: bridge-mcp-server#cancel). */
export function cancelOf(
  requestId: string | number,
  reason: string,
): { jsonrpc: '2.0'; method: 'notifications/cancelled'; params: { requestId: string | number; reason: string } } {
  return { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId, reason } };
}

/** JSON-RPC and MCP SDK error codes the table names. */
export const MCP_ERROR = {
  parse: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internal: -32603,
  connectionClosed: -32000,
  requestTimeout: -32001,
} as const;

/**
 * The TAP error of a call that failed without a result: a JSON-RPC error, the server's death
 * (connection closed) or its silence past the deadline (spec: bridge-mcp-server#failures).
 */
export function tapErrorOf(error: { code?: number; message?: string }): ErrorPayload {
  const said = line(error.message ?? 'no message', 2048);
  switch (error.code) {
    case MCP_ERROR.methodNotFound:
      return anyErrorPayload('CAPABILITY_NOT_SUPPORTED', `the MCP server does not call tools: ${said}`);
    case MCP_ERROR.invalidParams:
      return anyErrorPayload('INVALID_MESSAGE', `the MCP server refused the arguments: ${said}`);
    case MCP_ERROR.connectionClosed:
      return anyErrorPayload('INTERNAL_ERROR', `the MCP server is gone: ${said}`, undefined, { retryable: false });
    case MCP_ERROR.requestTimeout:
      return anyErrorPayload('DEADLINE_EXCEEDED', `the MCP server did not answer in time: ${said}`);
    case MCP_ERROR.parse:
    case MCP_ERROR.invalidRequest:
      return anyErrorPayload('INTERNAL_ERROR', `the MCP server could not read the bridge's request: ${said}`, undefined, {
        retryable: false,
      });
    default:
      return anyErrorPayload(
        'INTERNAL_ERROR',
        `the MCP server failed: ${said}${error.code === undefined ? '' : ` (JSON-RPC error ${error.code})`}`,
      );
  }
}
