/**
 * A TAP agent as an A2A server (spec: bridge-a2a): the A2A request handler over a TAP session or
 * a mesh, served over JSON-RPC on HTTP by the A2A SDK's express handlers. A message starts a task
 * (its messageId the TAP idempotency key) or answers one that waits; states, stream events, cancel
 * and errors follow a2a-mapping.ts; resubscribe replays from the TAP stream the facade holds.
 */
import { randomUUID } from 'node:crypto';
import type { Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type {
  AgentCard as A2aCard,
  ListTasksRequest,
  ListTasksResponse,
  Message,
  SendMessageRequest,
  StreamResponse,
  Task,
} from '@a2a-js/sdk';
import type { A2ARequestHandler, ServerCallContext } from '@a2a-js/sdk/server';
import { TapClient } from '../client/index.ts';
import { agentCardOf, decisionOf, isInterrupted, KEY, A2A_STATE, targetOf, traceOf, messageValue } from './a2a-mapping.ts';
import { type A2aTarget, listTasksOf } from './a2a-list.ts';
import { loadA2aServerSdk, type A2aServerSdk } from './a2a-sdk.ts';
import { A2aTask } from './a2a-tasks.ts';

export type { A2aTarget } from './a2a-list.ts';

/** Why a task over a mesh that asks for input is cancelled (spec: bridge-a2a#mesh). */
const INPUT_OVER_MESH = 'the agent asked for input, which this facade does not carry over a mesh';

/** Options of the A2A facade. */
export interface A2aFacadeOptions {
  /** The address to listen on (default 127.0.0.1). */
  host?: string;
  /** The port (default 0: any free one). */
  port?: number;
  /** How many tasks the facade remembers, the newest (default 1024); older ones are forgotten once ended. */
  tasksKept?: number;
}

/** A running A2A facade. */
export interface A2aFacade {
  /** The base URL of the JSON-RPC endpoint; the card is at `${url}.well-known/agent-card.json`. */
  readonly url: string;
  /** The agent card as it stands (over a mesh, of the live agents now). */
  readonly card: A2aCard;
  /** Stops listening and ends open streams; the TAP session is the caller's to close. */
  close(): Promise<void>;
}

/** The request headers the A2A SDK keeps in the call's context. */
function headerOf(context: ServerCallContext, name: string): string | undefined {
  const headers = context.state.get('headers') as Record<string, string | string[] | undefined> | undefined;
  const v = headers?.[name];
  return Array.isArray(v) ? v[0] : v;
}

/** The A2A request handler of a TAP session (spec: bridge-a2a#methods). */
export class TapA2aHandler implements A2ARequestHandler {
  private readonly tasks = new Map<string, A2aTask>();
  private readonly byMessageId = new Map<string, A2aTask>();

  constructor(
    private readonly client: A2aTarget,
    private readonly url: string,
    private readonly errors: A2aServerSdk['errors'],
    private readonly tasksKept = 1024,
  ) {}

  /** The card of the agent, or of the mesh's live agents as they are now (spec: bridge-a2a#mesh). */
  async getAgentCard(): Promise<A2aCard> {
    return agentCardOf(this.client.agent, this.url);
  }

  async getAuthenticatedExtendedAgentCard(): Promise<A2aCard> {
    throw new this.errors.ExtendedAgentCardNotConfiguredError('this facade has no extended agent card');
  }

  async sendMessage(params: SendMessageRequest): Promise<Message | Task> {
    const { task, after } = await this.accept(params);
    if (params.configuration?.returnImmediately) return task.snapshot();
    return task.settled(after);
  }

  async *sendMessageStream(params: SendMessageRequest): AsyncGenerator<StreamResponse> {
    const { task, after, repeat } = await this.accept(params);
    // A repeated messageId joins the task's stream where it stands (spec: bridge-a2a#idempotency).
    yield* task.stream(repeat ? undefined : after, { interruptAfter: after });
  }

  async getTask(params: { id: string; historyLength?: number | undefined }): Promise<Task> {
    return this.find(params.id).snapshot(params.historyLength);
  }

  async cancelTask(params: { id: string }): Promise<Task> {
    const task = this.find(params.id);
    const state = task.state;
    if (state === A2A_STATE.COMPLETED || state === A2A_STATE.FAILED || state === A2A_STATE.CANCELED || state === A2A_STATE.REJECTED)
      throw new this.errors.TaskNotCancelableError(`task ${params.id} has ended; only a running or waiting task can be cancelled`);
    await task.tap.cancel('cancelled by the A2A client (CancelTask)').catch(() => {});
    return task.settled(Number.POSITIVE_INFINITY);
  }

  async *resubscribe(params: { id: string }, context: ServerCallContext): AsyncGenerator<StreamResponse> {
    const task = this.find(params.id);
    const last = headerOf(context, KEY.lastSequence);
    const after = last === undefined || !/^\d+$/.test(last) ? undefined : Number(last);
    yield* task.stream(after);
  }

  /** ListTasks: from TAP 1.1's task listing of the session, or over a mesh from the tasks the facade holds (spec: bridge-a2a#list, bridge-a2a#mesh). */
  async listTasks(params: ListTasksRequest): Promise<ListTasksResponse> {
    return listTasksOf(this.client, this.tasks, this.errors, params);
  }

  async createTaskPushNotificationConfig(): Promise<never> {
    throw new this.errors.PushNotificationNotSupportedError('this facade sends no push notifications; stream or resubscribe instead');
  }

  async getTaskPushNotificationConfig(): Promise<never> {
    return this.createTaskPushNotificationConfig();
  }

  async listTaskPushNotificationConfigs(): Promise<never> {
    return this.createTaskPushNotificationConfig();
  }

  async deleteTaskPushNotificationConfig(): Promise<never> {
    return this.createTaskPushNotificationConfig();
  }

  private find(id: string): A2aTask {
    const task = this.tasks.get(id);
    if (task === undefined) throw new this.errors.TaskNotFoundError(`no task ${id} here: it never existed or was forgotten`);
    return task;
  }

  /** Starts the task a new message asks for, answers the task it continues, or finds the task its repeated messageId started. */
  private async accept(params: SendMessageRequest): Promise<{ task: A2aTask; after: number; repeat: boolean }> {
    const message = params.message;
    if (message === undefined) throw new this.errors.RequestMalformedError('the request has no message');
    const repeated = this.byMessageId.get(message.messageId);
    if (repeated !== undefined) return { task: repeated, after: 0, repeat: true };
    if (message.taskId !== '' && message.taskId !== undefined) return { ...(await this.answer(message)), repeat: false };
    const target = targetOf(message, this.client.agent, params.metadata);
    if ('problem' in target) throw new this.errors.RequestMalformedError(target.problem);
    const id = randomUUID();
    const task = new A2aTask({ id, contextId: message.contextId || randomUUID() }, message, target.capability);
    const trace = traceOf(message.metadata, params.metadata);
    const options = { idempotencyKey: message.messageId, ...(trace === undefined ? {} : { metadata: trace }) };
    // Over a mesh the task is routed to a live agent and has that agent's task id; an input request stays there (spec: bridge-a2a#mesh).
    if (this.client instanceof TapClient) task.follow(this.client.submit(target.capability, target.input, { taskId: id, ...options }));
    else task.follow(this.client.submit(target.capability, target.input, options), { inputCannotReach: INPUT_OVER_MESH });
    this.remember(task, message.messageId);
    return { task, after: 0, repeat: false };
  }

  /** A message to a task that waits: the answer to its input request, or the decision on its plan (spec: bridge-a2a#input). */
  private async answer(message: Message): Promise<{ task: A2aTask; after: number }> {
    const task = this.find(message.taskId);
    if (!isInterrupted(task.state))
      throw new this.errors.UnsupportedOperationError(
        `task ${message.taskId} waits for no message now; send a new message without taskId to start a task`,
      );
    const after = task.lastSequence;
    const handle = task.tap;
    try {
      if (task.state === A2A_STATE.AUTH_REQUIRED) {
        const decision = decisionOf(message);
        if (decision === undefined || handle.plan === undefined)
          throw new this.errors.RequestMalformedError(
            'the task waits for a plan decision: send a DataPart { "decision": "approved" | "rejected" | "needs_revision", "feedback"?: "..." }',
          );
        await handle.decide(handle.plan.plan_id, decision);
      } else {
        if (handle.answer === undefined)
          throw new this.errors.UnsupportedOperationError(`${INPUT_OVER_MESH}; send a new message without taskId to start a task`);
        await handle.answer(messageValue(message));
      }
    } catch (err) {
      if (err instanceof Error && err.name === 'TapClientError')
        throw new this.errors.RequestMalformedError(`the agent refused the answer: ${err.message}; the task still waits`);
      throw err;
    }
    task.addUserMessage(message);
    this.byMessageId.set(message.messageId, task);
    return { task, after };
  }

  private remember(task: A2aTask, messageId: string): void {
    this.tasks.set(task.ref.id, task);
    this.byMessageId.set(messageId, task);
    if (this.tasks.size <= this.tasksKept) return;
    for (const [id, t] of this.tasks) {
      if (this.tasks.size <= this.tasksKept) break;
      if (t.state === A2A_STATE.SUBMITTED || t.state === A2A_STATE.WORKING || isInterrupted(t.state)) continue;
      this.tasks.delete(id);
      for (const [m, v] of this.byMessageId) if (v === t) this.byMessageId.delete(m);
    }
  }
}

/** Serves the agent `client` is connected to, or a mesh, as an A2A server over HTTP (spec: bridge-a2a). */
export async function serveA2a(client: A2aTarget, options: A2aFacadeOptions = {}): Promise<A2aFacade> {
  const sdk = await loadA2aServerSdk();
  const app = sdk.express();
  const host = options.host ?? '127.0.0.1';
  const server: HttpServer = await new Promise((resolve, reject) => {
    const s = app.listen(options.port ?? 0, host, (err?: Error) => (err ? reject(err) : resolve(s)));
  });
  const port = (server.address() as AddressInfo).port;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}/`;
  const handler = new TapA2aHandler(client, url, sdk.errors, options.tasksKept);
  const userBuilder = sdk.handlers.UserBuilder.noAuthentication;
  app.use('/.well-known/agent-card.json', sdk.handlers.agentCardHandler({ agentCardProvider: handler, legacyCompat: { enabled: true } }));
  app.use('/', sdk.handlers.jsonRpcHandler({ requestHandler: handler, userBuilder, legacyCompat: { enabled: true } }));
  return {
    url,
    get card() {
      return agentCardOf(client.agent, url);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
