/**
 * A TAP agent as an MCP server (spec: bridge-mcp-host): each capability of the agent's card a tool,
 * each tools/call a task through the reference client. Progress and output events become progress
 * notifications, log events logging messages, notifications/cancelled a task.cancel, the task's
 * result a tool result (isError for any ending but completed), an input request or a plan an
 * elicitation when the MCP client declared that capability. The mapping itself is mcp-host-mapping.ts.
 */
import type { Transport as McpTransport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { CallToolRequest, ServerNotification } from '@modelcontextprotocol/sdk/types.js';
import { TapClient, TapClientError, type InputRequestPayload, type TaskHandle } from '../client/index.ts';
import type { FacadeTask, MeshTarget } from './mesh-target.ts';
import {
  elicitationOf,
  inputOf,
  META,
  notificationOf,
  planDecisionOf,
  planElicitationOf,
  refusalOf,
  toolOf,
  toolResultOf,
  traceOf,
  type McpToolResult,
  type TapEvent,
} from './mcp-host-mapping.ts';
import { loadMcpServerSdk, type McpServerSdk } from './mcp-host-sdk.ts';

/** Options of the MCP facade. */
export interface McpHostOptions {
  /** How a plan waiting for approval is decided: 'elicit' asks the MCP user (default), 'reject' rejects every plan. */
  plans?: 'elicit' | 'reject';
  /** How many times an answer the agent refuses (INVALID_ANSWER) is asked for again before the task is cancelled (default 2). */
  reasks?: number;
}

/** An MCP server in front of a TAP session. */
export interface McpHost {
  /** Serves MCP over `transport` (for example the SDK's StdioServerTransport). */
  connect(transport: McpTransport): Promise<void>;
  /** Closes the MCP side; the TAP session is the caller's to close. */
  close(): Promise<void>;
}

/** How long a call's result waits after its last notification (see callTool). */
const RESULT_AFTER_PROGRESS_MS = 20;

type Sdk = McpServerSdk;
type Server = InstanceType<Sdk['Server']>;
type Extra = { signal: AbortSignal; sendNotification: (n: ServerNotification) => Promise<void> };

/** What a running call needs to answer its task's requests: the server it came through, and why the bridge cancelled it. */
interface Call {
  cancelledBecause?: string;
}

/** True when the MCP client declared the elicitation capability (form mode). */
function canElicit(server: Server): boolean {
  return server.getClientCapabilities()?.elicitation !== undefined;
}

/** elicitation/create in form mode; the mapping builds only the flat schemas MCP accepts (mcp-host-mapping.ts). */
function elicit(server: Server, params: { message: string; requestedSchema: object }) {
  return server.elicitInput(params as Parameters<Server['elicitInput']>[0]);
}

/** The TAP side of the facade: a session with one agent, or a mesh whose live capabilities are the tools (spec: bridge-mcp-host#mesh). */
export type McpHostTarget = TapClient | MeshTarget;

/** Builds the MCP server of the agent `client` is connected to, or of a mesh (spec: bridge-mcp-host#tools). */
export async function createMcpHost(client: McpHostTarget, options: McpHostOptions = {}): Promise<McpHost> {
  const sdk = await loadMcpServerSdk();
  const card = client.agent;
  const server = new sdk.Server(
    { name: card.agent_id, title: card.name, version: '1.0.0' },
    { capabilities: { tools: {}, logging: {} }, instructions: card.description },
  );
  // The tools of the card as it is now: a mesh's card follows its registry.
  let toolsOf = card;
  let tools = new Map(card.capabilities.map((c) => [c.name, toolOf(c)]));
  const currentTools = () => {
    if (client.agent !== toolsOf) {
      toolsOf = client.agent;
      tools = new Map(toolsOf.capabilities.map((c) => [c.name, toolOf(c)]));
    }
    return tools;
  };
  const calls = new WeakMap<object, Call>();

  server.setRequestHandler(sdk.types.ListToolsRequestSchema, async () => ({ tools: [...currentTools().values()] }));
  server.setRequestHandler(sdk.types.CallToolRequestSchema, (request, extra) =>
    callTool(request as CallToolRequest, extra as unknown as Extra),
  );

  // spec: bridge-mcp-host#input — an input request becomes elicitation/create, or cancels the task.
  // A mesh asks the facade for no input: an input request stays with the session of the agent that made it.
  if (client instanceof TapClient)
    client.on('input', ({ handle, request }: { handle: TaskHandle; request: InputRequestPayload }) => {
      const call = calls.get(handle);
      if (call !== undefined) void answerInput(handle, request, call);
    });

  async function answerInput(handle: TaskHandle, request: InputRequestPayload, call: Call): Promise<void> {
    const elicitation = elicitationOf(request);
    const cancel = async (why: string): Promise<void> => {
      call.cancelledBecause = why;
      await handle.cancel(why).catch(() => {});
    };
    if (!canElicit(server))
      return cancel(`the agent asked for input ("${request.prompt}") and this MCP client declared no elicitation capability`);
    if (elicitation === undefined)
      return cancel(
        `the agent asked for input whose schema MCP elicitation cannot express (only flat objects of strings, numbers and booleans)`,
      );
    let message = elicitation.params.message;
    for (let asked = 0; asked <= (options.reasks ?? 2); asked++) {
      const outcome = await elicit(server, { ...elicitation.params, message }).catch((err: Error) => err);
      // An answer that does not match the requested schema (the SDK checks it: -32602) is asked for again.
      if (outcome instanceof Error && (outcome as { code?: unknown }).code === sdk.types.ErrorCode.InvalidParams) {
        message = `${elicitation.params.message}\n(The last answer was refused: ${outcome.message})`;
        continue;
      }
      if (outcome instanceof Error) return cancel(`the elicitation failed: ${outcome.message}`);
      if (outcome.action !== 'accept') return cancel(`the MCP user chose ${outcome.action} when asked for input`);
      try {
        await handle.answer(elicitation.answerOf(outcome.content as Record<string, unknown> | undefined), request.request_id);
        return;
      } catch (err) {
        if (!(err instanceof TapClientError) || err.code !== 'INVALID_ANSWER') return;
        message = `${elicitation.params.message}\n(The last answer was refused: ${err.message})`;
      }
    }
    return cancel('the answers given were refused by the agent (INVALID_ANSWER) too many times');
  }

  async function decidePlan(plan: Parameters<typeof planElicitationOf>[0]) {
    if (options.plans === 'reject') return { decision: 'rejected' as const, feedback: 'this bridge rejects every plan (--plans reject)' };
    if (!canElicit(server))
      return { decision: 'rejected' as const, feedback: 'the MCP client declared no elicitation capability to approve plans' };
    return planDecisionOf(await elicit(server, planElicitationOf(plan)));
  }

  // spec: bridge-mcp-host#calls
  async function callTool(request: CallToolRequest, extra: Extra): Promise<McpToolResult> {
    const name = request.params.name;
    const tools = currentTools();
    const tool = tools.get(name);
    if (tool === undefined)
      throw new sdk.types.McpError(
        sdk.types.ErrorCode.InvalidParams,
        `unknown tool ${name}: tools/list names the ${tools.size} tools of ${card.agent_id}`,
      );
    const meta = request.params._meta as Record<string, unknown> | undefined;
    const progressToken = meta?.progressToken as string | number | undefined;
    const trace = traceOf(meta);
    const key = (meta?.[META] as { idempotency_key?: unknown } | undefined)?.idempotency_key;
    const call: Call = {};
    const handle: FacadeTask = client.submit(name, inputOf(tool, request.params.arguments), {
      ...(trace === undefined ? {} : { metadata: trace }),
      ...(typeof key === 'string' ? { idempotencyKey: key } : {}),
      onPlan: (submitted) => decidePlan(submitted.plan),
    });
    calls.set(handle, call);
    // spec: bridge-mcp-host#cancel — notifications/cancelled aborts the request's signal.
    const onAbort = () => {
      call.cancelledBecause = 'cancelled by the MCP client (notifications/cancelled)';
      handle.cancel(call.cancelledBecause).catch(() => {});
    };
    extra.signal.addEventListener('abort', onAbort, { once: true });
    const forwarding = forwardEvents(handle, name, progressToken, extra, call);
    try {
      const result = await handle.result;
      // The MCP SDK's client (1.32) handles a notification a microtask late, after a response
      // read in the same chunk has already removed the call's progress handler: the result
      // waits a moment after the last notification, so that the host sees it.
      if ((await forwarding) > 0) await new Promise((resolve) => setTimeout(resolve, RESULT_AFTER_PROGRESS_MS));
      const out = toolResultOf(result, handle.taskId);
      if (result.status === 'cancelled' && call.cancelledBecause !== undefined)
        out.content = [{ type: 'text', text: `cancelled: ${call.cancelledBecause}` }];
      return out;
    } catch (err) {
      const e = err instanceof TapClientError ? err : new TapClientError('INTERNAL_ERROR', (err as Error).message);
      const mapped = refusalOf(e.code, e.payload?.message ?? e.message, e.retryable);
      if ('rpc' in mapped) throw new sdk.types.McpError(mapped.rpc.code, mapped.rpc.message, mapped.rpc.data);
      return mapped.result;
    } finally {
      extra.signal.removeEventListener('abort', onAbort);
    }
  }

  /** Sends the notification of each task event while the call lasts (spec: bridge-mcp-host#events); resolves with how many it sent. */
  async function forwardEvents(
    handle: FacadeTask,
    capability: string,
    token: string | number | undefined,
    extra: Extra,
    call: Call,
  ): Promise<number> {
    let sent = 0;
    try {
      for await (const m of handle.events) {
        // spec: bridge-mcp-host#mesh — over a mesh no input request reaches the facade: the call is cancelled, not left waiting.
        if (!(client instanceof TapClient) && m.payload.kind === 'state' && m.payload.state === 'input_required') {
          call.cancelledBecause = 'the agent asked for input, which this bridge does not carry over a mesh';
          handle.cancel(call.cancelledBecause).catch(() => {});
        }
        const n = notificationOf(m.payload as TapEvent, m.sequence ?? 0, capability, token);
        if (n === undefined || extra.signal.aborted) continue;
        await extra.sendNotification(n as ServerNotification).catch(() => {});
        sent++;
      }
    } catch {
      // The handle failed: callTool reports it.
    }
    return sent;
  }

  return {
    connect: (transport) => server.connect(transport),
    close: () => server.close(),
  };
}

/** Serves the agent `client` is connected to (or a mesh) as an MCP server on this process's stdin and stdout, until stdin ends. */
export async function serveMcpHostOverStdio(client: McpHostTarget, options: McpHostOptions = {}): Promise<McpHost> {
  const sdk = await loadMcpServerSdk();
  const host = await createMcpHost(client, options);
  await host.connect(new sdk.StdioServerTransport());
  return host;
}
