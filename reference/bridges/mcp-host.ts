/**
 * A TAP agent as an MCP server (spec: bridge-mcp-host): each capability of the agent's card a tool,
 * each tools/call a task through the reference client. Progress and output events become progress
 * notifications, log events logging messages, notifications/cancelled a task.cancel, the task's
 * result a tool result (isError for any ending but completed), an input request or a plan an
 * elicitation when the MCP client declared that capability. A tools/call that carries `task` is
 * answered at once with an MCP task that follows the TAP task (mcp-host-tasks.ts). The mapping
 * itself is mcp-host-mapping.ts.
 */
import type { Transport as McpTransport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { CallToolRequest, CreateTaskResult, ServerNotification } from '@modelcontextprotocol/sdk/types.js';
import { TapClient, TapClientError, type InputRequestPayload, type ResultPayload, type TaskHandle } from '../client/index.ts';
import type { FacadeTask, MeshTarget } from './mesh-target.ts';
import {
  elicitationOf,
  inputOf,
  MCP_TASK_STATUS_OF,
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
import { FacadeTaskStore, TASK_POLL_MS } from './mcp-host-tasks.ts';

/** Options of the MCP facade. */
export interface McpHostOptions {
  /** How a plan waiting for approval is decided: 'elicit' asks the MCP user (default), 'reject' rejects every plan. */
  plans?: 'elicit' | 'reject';
  /** How many times an answer the agent refuses (INVALID_ANSWER) is asked for again before the task is cancelled (default 2). */
  reasks?: number;
  /** The interval, in milliseconds, a host is asked to keep between two tasks/get of an MCP task (default 1000). */
  taskPollMs?: number;
}

/** An MCP server in front of a TAP session. */
export interface McpHost {
  /** Serves MCP over `transport` (for example the SDK's StdioServerTransport). */
  connect(transport: McpTransport): Promise<void>;
  /**
   * Closes the MCP side, first sending task.cancel for every call whose result has not come (a
   * plain call or an MCP task: no MCP session is left to read it); the TAP session is the caller's
   * to close.
   */
  close(): Promise<void>;
}

/** How long a call's result waits after its last notification (see callTool). */
const RESULT_AFTER_PROGRESS_MS = 20;
/** How long close() waits for the cancels of the calls still running to be sent. */
const CLOSE_CANCEL_MS = 2000;

type Sdk = McpServerSdk;
type Server = InstanceType<Sdk['Server']>;
type Extra = {
  signal: AbortSignal;
  sessionId?: string;
  requestId: string | number;
  sendNotification: (n: ServerNotification) => Promise<void>;
};

/** What a running call needs to answer its task's requests: why the bridge cancelled it, and its MCP task when it has one. */
interface Call {
  cancelledBecause?: string;
  mcpTaskId?: string;
}

/** The progress token a call's _meta carries, if any. */
function progressTokenOf(request: CallToolRequest): string | number | undefined {
  return (request.params._meta as Record<string, unknown> | undefined)?.progressToken as string | number | undefined;
}

/** True when the MCP client declared the elicitation capability (form mode). */
function canElicit(server: Server): boolean {
  return server.getClientCapabilities()?.elicitation !== undefined;
}

/** The TAP side of the facade: a session with one agent, or a mesh whose live capabilities are the tools (spec: bridge-mcp-host#mesh). */
export type McpHostTarget = TapClient | MeshTarget;

/** Builds the MCP server of the agent `client` is connected to, or of a mesh (spec: bridge-mcp-host#tools). */
export async function createMcpHost(client: McpHostTarget, options: McpHostOptions = {}): Promise<McpHost> {
  const sdk = await loadMcpServerSdk();
  const card = client.agent;
  // spec: bridge-mcp-host#mcp-tasks — the status of each MCP task follows its TAP task; the host may hear each change.
  // An elicitation the host never fetched with tasks/result is dropped with its task.
  const queue = new sdk.InMemoryTaskMessageQueue();
  const store: FacadeTaskStore = new FacadeTaskStore(
    options.taskPollMs ?? TASK_POLL_MS,
    (task) => {
      server.notification({ method: 'notifications/tasks/status', params: task } as ServerNotification).catch(() => {});
    },
    (taskId) => void queue.dequeueAll(taskId).catch(() => {}),
  );
  const server = new sdk.Server(
    { name: card.agent_id, title: card.name, version: '1.0.0' },
    {
      capabilities: { tools: {}, logging: {}, tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } },
      instructions: card.description,
      taskStore: store,
      taskMessageQueue: queue,
    },
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
  /** The tasks of calls, plain or MCP tasks, whose result has not come. */
  const running = new Set<FacadeTask>();

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

  /**
   * elicitation/create in form mode (the mapping builds only the flat schemas MCP accepts). For a
   * call that is an MCP task it is tied to that task: the SDK queues it for the host's tasks/result,
   * and the task is input_required until it is answered (spec: bridge-mcp-host#mcp-tasks).
   */
  async function elicit(params: { message: string; requestedSchema: object }, call: Call) {
    const p = params as Parameters<Server['elicitInput']>[0];
    const taskId = call.mcpTaskId;
    if (taskId === undefined) return server.elicitInput(p);
    store.asking(taskId, 1);
    try {
      return await server.elicitInput(p, { relatedTask: { taskId } });
    } finally {
      store.asking(taskId, -1);
    }
  }

  /** Sends a call's task its task.cancel; the call keeps the first reason the bridge gave, for its tool result. */
  function cancelCall(handle: FacadeTask, call: Call, why: string): Promise<void> {
    call.cancelledBecause ??= why;
    return handle.cancel(why).then(
      () => {},
      () => {},
    );
  }

  async function answerInput(handle: TaskHandle, request: InputRequestPayload, call: Call): Promise<void> {
    const elicitation = elicitationOf(request);
    const cancel = (why: string): Promise<void> => cancelCall(handle, call, why);
    if (!canElicit(server))
      return cancel(`the agent asked for input ("${request.prompt}") and this MCP client declared no elicitation capability`);
    if (elicitation === undefined)
      return cancel(
        `the agent asked for input whose schema MCP elicitation cannot express (only flat objects of strings, numbers and booleans)`,
      );
    let message = elicitation.params.message;
    for (let asked = 0; asked <= (options.reasks ?? 2); asked++) {
      const outcome = await elicit({ ...elicitation.params, message }, call).catch((err: Error) => err);
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

  async function decidePlan(plan: Parameters<typeof planElicitationOf>[0], call: Call) {
    if (options.plans === 'reject') return { decision: 'rejected' as const, feedback: 'this bridge rejects every plan (--plans reject)' };
    if (!canElicit(server))
      return { decision: 'rejected' as const, feedback: 'the MCP client declared no elicitation capability to approve plans' };
    return planDecisionOf(await elicit(planElicitationOf(plan), call));
  }

  /** Submits the task of a tools/call; a tool the facade did not list is JSON-RPC -32602 (spec: bridge-mcp-host#calls). */
  function submit(request: CallToolRequest, call: Call): FacadeTask {
    const name = request.params.name;
    const tool = currentTools().get(name)!;
    const meta = request.params._meta as Record<string, unknown> | undefined;
    const trace = traceOf(meta);
    const key = (meta?.[META] as { idempotency_key?: unknown } | undefined)?.idempotency_key;
    const handle: FacadeTask = client.submit(name, inputOf(tool, request.params.arguments), {
      ...(trace === undefined ? {} : { metadata: trace }),
      ...(typeof key === 'string' ? { idempotencyKey: key } : {}),
      onPlan: (submitted) => decidePlan(submitted.plan, call),
    });
    calls.set(handle, call);
    running.add(handle);
    const done = () => running.delete(handle);
    handle.result.then(done, done);
    return handle;
  }

  /** The tool result of a task's result, saying why the bridge cancelled it when it did (spec: bridge-mcp-host#results). */
  function resultOf(result: ResultPayload, handle: FacadeTask, call: Call): McpToolResult {
    const out = toolResultOf(result, handle.taskId);
    if (result.status === 'cancelled' && call.cancelledBecause !== undefined)
      out.content = [{ type: 'text', text: `cancelled: ${call.cancelledBecause}` }];
    return out;
  }

  /** A refused task.request as a JSON-RPC error or a tool result (spec: bridge-mcp-host#errors). */
  function refusedOf(err: unknown): { error: InstanceType<Sdk['types']['McpError']> } | { result: McpToolResult } {
    const e = err instanceof TapClientError ? err : new TapClientError('INTERNAL_ERROR', (err as Error).message);
    const mapped = refusalOf(e.code, e.payload?.message ?? e.message, e.retryable);
    if ('rpc' in mapped) return { error: new sdk.types.McpError(mapped.rpc.code, mapped.rpc.message, mapped.rpc.data) };
    return mapped;
  }

  // spec: bridge-mcp-host#calls
  async function callTool(request: CallToolRequest, extra: Extra): Promise<McpToolResult | CreateTaskResult> {
    const name = request.params.name;
    const tools = currentTools();
    if (!tools.has(name))
      throw new sdk.types.McpError(
        sdk.types.ErrorCode.InvalidParams,
        `unknown tool ${name}: tools/list names the ${tools.size} tools of ${card.agent_id}`,
      );
    if (request.params.task !== undefined) return callAsTask(request, extra);
    const progressToken = progressTokenOf(request);
    const call: Call = {};
    const handle = submit(request, call);
    // spec: bridge-mcp-host#cancel — notifications/cancelled aborts the request's signal.
    const onAbort = () => {
      // Already cancelled by the bridge (the MCP session ended, say): the task has had its task.cancel.
      if (call.cancelledBecause === undefined) void cancelCall(handle, call, 'cancelled by the MCP client (notifications/cancelled)');
    };
    extra.signal.addEventListener('abort', onAbort, { once: true });
    const forwarding = forwardEvents(handle, name, progressToken, extra, call);
    try {
      const result = await handle.result;
      // The MCP SDK's client (1.32) handles a notification a microtask late, after a response
      // read in the same chunk has already removed the call's progress handler: the result
      // waits a moment after the last notification, so that the host sees it.
      if ((await forwarding) > 0) await new Promise((resolve) => setTimeout(resolve, RESULT_AFTER_PROGRESS_MS));
      return resultOf(result, handle, call);
    } catch (err) {
      const refused = refusedOf(err);
      if ('error' in refused) throw refused.error;
      return refused.result;
    } finally {
      extra.signal.removeEventListener('abort', onAbort);
    }
  }

  /**
   * A tools/call with `task` (spec: bridge-mcp-host#mcp-tasks): answered at once with an MCP task,
   * which follows the TAP task until its result, or the refusal of its task.request, ends it.
   */
  async function callAsTask(request: CallToolRequest, extra: Extra): Promise<CreateTaskResult> {
    const task = await store.createTask({ ttl: request.params.task?.ttl }, extra.requestId, request, extra.sessionId);
    const taskId = task.taskId;
    const call: Call = { mcpTaskId: taskId };
    const handle = submit(request, call);
    store.follow(taskId, () => {
      call.cancelledBecause = 'cancelled by the MCP client (tasks/cancel)';
      handle.cancel(call.cancelledBecause).catch(() => {});
    });
    const progressToken = progressTokenOf(request);
    const forwarding = forwardEvents(handle, request.params.name, progressToken, extra, call);
    handle.result.then(
      async (result) => {
        await forwarding;
        const out = resultOf(result, handle, call);
        const status = MCP_TASK_STATUS_OF[result.status] ?? 'failed';
        store.end(taskId, status, out, status === 'completed' ? undefined : out.content[0]?.text);
      },
      (err: unknown) => {
        const refused = refusedOf(err);
        if ('error' in refused) store.end(taskId, 'failed', refused.error, refused.error.message);
        else store.end(taskId, 'failed', refused.result, refused.result.content[0]?.text);
      },
    );
    return { task };
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
        // spec: bridge-mcp-host#mcp-tasks — the MCP task's status follows the TAP task's state.
        if (call.mcpTaskId !== undefined && m.payload.kind === 'state' && m.payload.state !== undefined)
          store.moved(call.mcpTaskId, MCP_TASK_STATUS_OF[m.payload.state] ?? 'working');
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
    close: async () => {
      // spec: bridge-mcp-host#closing, TAP-BRIDGE-183 — nobody is left to read these results.
      const cancels = [...running].map((handle) => cancelCall(handle, calls.get(handle) ?? {}, 'the MCP client went away'));
      await Promise.race([Promise.all(cancels), new Promise((resolve) => setTimeout(resolve, CLOSE_CANCEL_MS).unref())]);
      store.close();
      await server.close();
    },
  };
}

/** Serves the agent `client` is connected to (or a mesh) as an MCP server on this process's stdin and stdout, until stdin ends. */
export async function serveMcpHostOverStdio(client: McpHostTarget, options: McpHostOptions = {}): Promise<McpHost> {
  const sdk = await loadMcpServerSdk();
  const host = await createMcpHost(client, options);
  await host.connect(new sdk.StdioServerTransport());
  return host;
}
