/**
 * An MCP server as a TAP agent: starts the server, lists its tools and gives the card and the
 * capability handlers that the library's agent runtime serves, each tool call made through the
 * MCP SDK's client (spec: bridge-mcp-server). The mapping itself is mcp-mapping.ts.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { type AgentOptions, CapabilityError, type CapabilityDefinition, type TaskContext } from '../agent/index.ts';
import { inputValidator } from '../agent/input-schemas.ts';
import { TapError } from '../core/index.ts';
import type { Capability } from '../../schemas/src/index.ts';
import { packageVersion } from '../package.ts';
import {
  callOf,
  capabilitiesOf,
  failureOf,
  MCP_ERROR,
  type McpCallResult,
  type McpServerInfo,
  type McpTool,
  outputOf,
  type PlanMode,
  planFor,
  planNeeded,
  progressOf,
  tapErrorOf,
} from './mcp-mapping.ts';
import { type CloseWaits, DEFAULT_CLOSE_WAITS, describeExit, type McpExit, McpProcess, type McpServerCommand } from './mcp-process.ts';
import { loadMcpClient, type McpClientSdk } from './mcp-sdk.ts';

/** How a bridge to an MCP server is made. */
export interface McpBridgeOptions {
  server: McpServerCommand;
  /** Which tools wait for an approved plan (default "destructive"). */
  plans?: PlanMode;
  /** The agent id of the card (default "mcp." and the server's name). */
  agentId?: string;
  /** How long the server has to answer initialize and tools/list (default 30 000 ms). */
  startTimeoutMs?: number;
  closeWaits?: CloseWaits;
  /** Where the bridge says what it did not map (default stderr). */
  log?: (message: string) => void;
}

/** A running bridge: the agent options to serve, and the server behind them. */
export interface McpBridge {
  /** The card and capability handlers, for createAgent, runAgent or serveAgent. */
  agent: Pick<AgentOptions, 'card' | 'capabilities'>;
  server: McpServerInfo;
  /** The tools not offered, each with why. */
  skipped: { tool: string; why: string }[];
  /** The server's process id. */
  pid: number | undefined;
  /** Resolves when the server process has exited. */
  exited: Promise<McpExit>;
  /** Closes the server the MCP way (stdin, SIGTERM, SIGKILL); safe to call more than once. */
  close(): Promise<void>;
}

/** The time a call may take past the task's deadline before the SDK gives up on it: the runtime's deadline ends the task first. */
const DEADLINE_SLACK_MS = 1_000;

/** Agent ids are dotted lowercase segments (spec: envelope#identifiers). */
function agentIdOf(server: McpServerInfo): string {
  const id = `mcp.${server.name
    .toLowerCase()
    .replace(/[^a-z0-9_.-]+/g, '-')
    .replace(/^[^a-z0-9]+|[^a-z0-9_-]+$/g, '')}`;
  return /^[a-z0-9][a-z0-9_-]*(\.[a-z0-9_-]+)*$/.test(id) && id.length <= 128 ? id : 'mcp.server';
}

/** Every tool of the server, page by page. */
async function listTools(client: Client, sdk: McpClientSdk, timeout: number): Promise<McpTool[]> {
  const tools: McpTool[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.request({ method: 'tools/list', params: cursor ? { cursor } : {} }, sdk.ListToolsResultSchema, { timeout });
    tools.push(...(page.tools as McpTool[]));
    cursor = page.nextCursor;
  } while (cursor);
  return tools;
}

/** Calls `tool` for a task: the TAP signal becomes MCP cancellation, MCP progress TAP progress, and failures the table's codes. */
async function callTool(client: Client, sdk: McpClientSdk, process: McpProcess, tool: McpTool, input: unknown, ctx: TaskContext) {
  if (process.exit)
    throw new TapError(tapErrorOf({ code: MCP_ERROR.connectionClosed, message: `the server ${describeExit(process.exit)}` }));
  try {
    return (await client.request(callOf(tool.name, input), sdk.CallToolResultSchema, {
      // spec: bridge-mcp-server#cancel: the SDK sends notifications/cancelled when the signal fires.
      signal: ctx.signal,
      onprogress: (p) => ctx.progress(progressOf(p)),
      timeout: Math.max(1, ctx.deadline.getTime() - ctx.now()) + DEADLINE_SLACK_MS,
    })) as McpCallResult;
  } catch (err) {
    // Cancel, deadline, shutdown, session loss: the runtime ends the task as its signal says.
    if (ctx.signal.aborted) throw ctx.signal.reason;
    const { code, message } = err as { code?: unknown; message?: string };
    if (code === MCP_ERROR.connectionClosed) {
      const exit = await Promise.race([process.exited, new Promise<undefined>((r) => setTimeout(() => r(undefined), 100).unref())]);
      throw new TapError(tapErrorOf({ code, message: exit ? `the server ${describeExit(exit)} during the call` : message }));
    }
    throw new TapError(tapErrorOf({ ...(typeof code === 'number' ? { code } : {}), message: message ?? String(err) }));
  }
}

/** The capability definition of one tool, or why it is not offered. */
function toolDefinition(
  tool: McpTool,
  capability: Capability,
  mode: PlanMode,
  call: (tool: McpTool, input: unknown, ctx: TaskContext) => Promise<McpCallResult>,
  alive: () => void,
): CapabilityDefinition | string {
  try {
    inputValidator(capability.name, capability.input_schema ?? {});
  } catch (err) {
    return (err as Error).message;
  }
  const readOnly = tool.annotations?.readOnlyHint === true;
  return {
    capability,
    handler: async (input: unknown, ctx: TaskContext) => {
      // spec: bridge-mcp-server#failures: after the server exited, at once, before any plan.
      alive();
      // spec: bridge-mcp-server#plans: the call waits for an approved plan; a revision cannot change a tool call.
      if (planNeeded(tool, mode)) {
        const decision = await ctx.submitPlan(planFor(tool, input));
        if (decision.decision !== 'approved')
          throw new TapError(
            'PLAN_REJECTED',
            `the plan needs a revision, and the bridge cannot change a call of ${tool.name}: submit a new task with other input`,
          );
      }
      const result = readOnly ? await call(tool, input, ctx) : await ctx.sideEffect(() => call(tool, input, ctx));
      const failure = failureOf(result);
      if (failure) throw new CapabilityError(failure.message, { details: failure.details });
      return outputOf(result);
    },
  };
}

/**
 * Starts the MCP server of `options.server`, initializes it and lists its tools; the bridge's
 * agent offers each tool that maps as a capability. Rejects with a sentence for people when the
 * server cannot be started or does not answer, having closed it.
 */
export async function startMcpBridge(options: McpBridgeOptions): Promise<McpBridge> {
  const sdk = await loadMcpClient('tap-bridge mcp');
  const log = options.log ?? ((message: string) => process.stderr.write(`tap-bridge mcp: ${message}\n`));
  const timeout = options.startTimeoutMs ?? 30_000;
  const child = new McpProcess(options.server, options.closeWaits ?? DEFAULT_CLOSE_WAITS);
  const client = new sdk.Client({ name: 'tap-bridge', version: packageVersion() }, { capabilities: {} });
  // A progress notification that comes after its call ended is routine; anything else is said.
  client.onerror = (err) => {
    if (!/progress notification for an unknown token/.test(err.message)) log(`the MCP server: ${err.message}`);
  };
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= client.close().then(
      () => child.close(),
      () => child.close(),
    );
    return closing;
  };
  const command = [options.server.command, ...options.server.args].join(' ');
  let tools: McpTool[];
  try {
    await client.connect(child, { timeout });
    tools = await listTools(client, sdk, timeout);
  } catch (err) {
    await close();
    const why = child.exit
      ? `it ${describeExit(child.exit)} before it answered initialize; run the command alone to see its own error output`
      : (err as { code?: unknown }).code === MCP_ERROR.requestTimeout
        ? `it did not answer initialize and tools/list within ${timeout / 1000} s; is it an MCP server speaking stdio?`
        : (err as Error).message;
    throw new Error(`the MCP server \`${command}\` did not start: ${why}`);
  }
  const info = client.getServerVersion() ?? { name: options.server.command, version: '0.0.0' };
  const server: McpServerInfo = { name: info.name, version: info.version, ...(info.title ? { title: info.title } : {}) };
  const call = (tool: McpTool, input: unknown, ctx: TaskContext) => callTool(client, sdk, child, tool, input, ctx);
  const alive = (): void => {
    if (child.exit) throw new TapError(tapErrorOf({ code: MCP_ERROR.connectionClosed, message: `the server ${describeExit(child.exit)}` }));
  };
  const capabilities: Record<string, CapabilityDefinition> = {};
  const { offered, skipped } = capabilitiesOf(tools, server);
  for (const { tool, capability } of offered) {
    const definition = toolDefinition(tool, capability, options.plans ?? 'destructive', call, alive);
    if (typeof definition === 'string') skipped.push({ tool: tool.name, why: definition });
    else capabilities[capability.name] = definition;
  }
  for (const { tool, why } of skipped) log(`the tool ${tool} is not offered: ${why}`);
  child.exited.then((exit) => {
    if (!closing) log(`the MCP server ${describeExit(exit)}; its tools now fail with INTERNAL_ERROR`);
  });
  const instructions = client.getInstructions();
  return {
    agent: {
      card: {
        agent_id: options.agentId ?? agentIdOf(server),
        name: (server.title ?? server.name).replace(/\s+/g, ' ').trim().slice(0, 256) || 'MCP server',
        description: (
          instructions ?? `The MCP server ${server.name} ${server.version}, its tools served as TAP capabilities by tap-bridge.`
        ).slice(0, 8192),
        capabilities: [],
        limits: { max_concurrent_tasks: 8, max_task_seconds: 600, max_message_bytes: 1_048_576 },
      },
      capabilities,
    },
    server,
    skipped,
    pid: child.pid,
    exited: child.exited,
    close,
  };
}
