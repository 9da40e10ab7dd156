/**
 * MCP tasks on the MCP facade (spec: bridge-mcp-host#mcp-tasks), driven by the MCP SDK's own
 * Client and its experimental tasks API (callToolStream, getTask, getTaskResult, listTasks,
 * cancelTask), in memory, in front of the reference agent runtime; and its task store alone.
 */
import type { ResponseMessage } from '@modelcontextprotocol/sdk/experimental/tasks';
import {
  CallToolResultSchema,
  TaskStatusNotificationSchema,
  type CallToolResult,
  type ElicitRequest,
  type Result,
} from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it, vi } from 'vitest';
import { TWO_FILE_PLAN as PLAN } from '../agent/peer.testkit.ts';
import { FacadeTaskStore, TASK_MAX_TTL_MS } from './mcp-host-tasks.ts';
import { frames, mcpFacades, requests } from './mcp-host.testkit.ts';

const mcpClient = mcpFacades();
/** A poll interval short enough for a test; the facade's own default is a second. */
const host = { taskPollMs: 10 };
const RELATED_TASK = 'io.modelcontextprotocol/related-task';

type Message = ResponseMessage<Result>;

/** Every message of a task-augmented call, from taskCreated to its result or error. */
async function drain<T extends Result>(stream: AsyncGenerator<ResponseMessage<T>, void, void>): Promise<Message[]> {
  const out: Message[] = [];
  for await (const m of stream) out.push(m);
  return out;
}

/** The statuses a stream's taskCreated and taskStatus messages gave, repeats removed. */
function statuses(messages: Message[]): string[] {
  const all = messages.flatMap((m) => (m.type === 'taskCreated' || m.type === 'taskStatus' ? [m.task.status] : []));
  return all.filter((s, i) => s !== all[i - 1]);
}

/** The tool result a stream ended with (it fails the test when the stream ended otherwise). */
function resultOf(messages: Message[]): CallToolResult {
  const last = messages.at(-1);
  expect(last?.type).toBe('result');
  return CallToolResultSchema.parse((last as { result: unknown }).result);
}

/** The text of a tool result's first block. */
function text(result: CallToolResult): string {
  return (result.content[0] as { text: string }).text;
}

/** Starts a call of `tap.test.sleep` for `ms` as an MCP task and gives the task the facade created, the call left running. */
async function sleepingTask(
  mcp: Awaited<ReturnType<typeof mcpClient>>['mcp'],
  ms: number,
): Promise<{ taskId: string; ttl: number | null }> {
  for await (const m of mcp.experimental.tasks.callToolStream({ name: 'tap.test.sleep', arguments: { input: { ms } } }, undefined, {
    task: {},
  })) {
    if (m.type === 'taskCreated') return m.task;
    break;
  }
  throw new Error('the call was not answered with a task');
}

/** Calls `tap.test.ask` (asking `prompt`, its answer of `schema`) as an MCP task, to its end: every message of the stream, and the task's id. */
async function askAsTask(
  mcp: Awaited<ReturnType<typeof mcpClient>>['mcp'],
  schema: Record<string, unknown>,
  prompt: string,
): Promise<{ messages: Message[]; taskId: string }> {
  const messages = await drain(
    mcp.experimental.tasks.callToolStream({ name: 'tap.test.ask', arguments: { input: { schema, prompt } } }, undefined, { task: {} }),
  );
  return { messages, taskId: (messages[0] as { task: { taskId: string } }).task.taskId };
}

describe('MCP tasks on the MCP facade (spec: bridge-mcp-host#mcp-tasks)', () => {
  it('declares tasks for tools/call, answers a call with task at once, and polls it from working to completed (TAP-BRIDGE-176, TAP-BRIDGE-150)', async () => {
    const { mcp, wire } = await mcpClient({ host });
    expect(mcp.getServerCapabilities()?.tasks).toEqual({ list: {}, cancel: {}, requests: { tools: { call: {} } } });
    const { tools } = await mcp.listTools();
    expect(tools.find((t) => t.name === 'tap.test.sleep')?.execution).toEqual({ taskSupport: 'optional' });
    const messages = await drain(
      mcp.experimental.tasks.callToolStream({ name: 'tap.test.sleep', arguments: { input: { ms: 150 } } }, undefined, {
        task: { ttl: 60_000 },
      }),
    );
    const created = messages[0]!;
    expect(created.type).toBe('taskCreated');
    const task = (created as { task: { taskId: string; ttl: number | null; pollInterval?: number } }).task;
    expect(task).toMatchObject({ ttl: 60_000, pollInterval: 10 });
    expect(statuses(messages)).toEqual(['working', 'completed']);
    const result = resultOf(messages);
    expect(result.structuredContent).toEqual({ slept_ms: 150 });
    const tapTaskId = frames(wire, 'in', 'task.result')[0]!.task_id;
    expect(result._meta?.['tap/bridge']).toMatchObject({ task_id: tapTaskId, status: 'completed' });
    expect(result._meta?.[RELATED_TASK]).toEqual({ taskId: task.taskId });
    // tasks/list gives the facade's tasks; tasks/get the one asked for.
    const listed = await mcp.experimental.tasks.listTasks();
    expect(listed.tasks.map((t) => [t.taskId, t.status])).toEqual([[task.taskId, 'completed']]);
    expect((await mcp.experimental.tasks.getTask(task.taskId)).status).toBe('completed');
  });

  it('cancels the task of every call still running, plain or an MCP task, when the MCP session ends (TAP-BRIDGE-183)', async () => {
    const { mcp, wire, host: facade } = await mcpClient({ host });
    const plain = mcp.callTool({ name: 'tap.test.sleep', arguments: { input: { ms: 60_000 } } }).catch((err: Error) => err);
    await sleepingTask(mcp, 60_000);
    await vi.waitFor(() => expect(frames(wire, 'in', 'task.accepted')).toHaveLength(2));
    await facade.close();
    const cancels = frames(wire, 'out', 'task.cancel');
    expect(cancels.map((m) => m.payload.reason)).toEqual(['the MCP client went away', 'the MCP client went away']);
    expect(new Set(cancels.map((m) => m.task_id))).toEqual(new Set(requests(wire).map((m) => m.task_id)));
    await vi.waitFor(() => expect(frames(wire, 'in', 'task.result').map((m) => m.payload.status)).toEqual(['cancelled', 'cancelled']));
    await plain;
  });

  it('sends task.cancel for tasks/cancel: the MCP task is cancelled and its result is the TAP task cancelled (TAP-BRIDGE-150, TAP-BRIDGE-178)', async () => {
    const { mcp, wire } = await mcpClient({ host });
    const { taskId, ttl } = await sleepingTask(mcp, 20_000);
    // A call that names no ttl gets the facade's: one hour.
    expect(ttl).toBe(3_600_000);
    await expect.poll(() => frames(wire, 'in', 'task.accepted').length).toBe(1);
    const cancelled = await mcp.experimental.tasks.cancelTask(taskId);
    expect(cancelled.status).toBe('cancelled');
    const result = await mcp.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    expect(frames(wire, 'out', 'task.cancel')).toHaveLength(1);
    expect(frames(wire, 'in', 'task.result').map((m) => m.payload.status)).toEqual(['cancelled']);
    expect(result.isError).toBe(true);
    expect(text(result)).toBe('cancelled: cancelled by the MCP client (tasks/cancel)');
    expect(result._meta?.['tap/bridge']).toMatchObject({ status: 'cancelled' });
    await expect(mcp.experimental.tasks.cancelTask(taskId)).rejects.toMatchObject({ code: -32602 });
  });

  it('ends the MCP task failed when the capability fails, tasks/result giving the tool result with isError (TAP-BRIDGE-177)', async () => {
    const { mcp } = await mcpClient({ host });
    const messages = await drain(
      mcp.experimental.tasks.callToolStream(
        { name: 'tap.test.fail', arguments: { input: { code: 'CAPABILITY_FAILED', message: 'the disk is full' } } },
        undefined,
        { task: {} },
      ),
    );
    expect(statuses(messages).at(-1)).toBe('failed');
    const taskId = (messages[0] as { task: { taskId: string } }).task.taskId;
    const task = await mcp.experimental.tasks.getTask(taskId);
    expect(task).toMatchObject({ status: 'failed', statusMessage: 'CAPABILITY_FAILED: the disk is full' });
    const result = await mcp.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    expect(result.isError).toBe(true);
    expect(text(result)).toBe('CAPABILITY_FAILED: the disk is full');
    expect((result._meta!['tap/bridge'] as { error: { code: string } }).error.code).toBe('CAPABILITY_FAILED');
  });

  it('shows input_required and puts the input request to the host by an elicitation tied to the task (TAP-BRIDGE-179, TAP-BRIDGE-180)', async () => {
    const asked: ElicitRequest[] = [];
    const { mcp, wire } = await mcpClient({
      host,
      elicit: (r) => {
        asked.push(r);
        return { action: 'accept', content: { answer: 4 } };
      },
    });
    const { messages, taskId } = await askAsTask(mcp, { type: 'integer' }, 'How many?');
    expect(statuses(messages)).toContain('input_required');
    expect(asked).toHaveLength(1);
    expect(asked[0]!.params).toMatchObject({ message: 'How many?', _meta: { [RELATED_TASK]: { taskId } } });
    expect(frames(wire, 'out', 'input.response').map((m) => m.payload.answer)).toEqual([4]);
    expect(resultOf(messages).structuredContent).toEqual({ answer: 4 });
    expect((await mcp.experimental.tasks.getTask(taskId)).status).toBe('completed');
  });

  it('gives a refused task.request as the tool result a plain call would get, the task failed (TAP-BRIDGE-177)', async () => {
    const { mcp } = await mcpClient({ host });
    const refused = await drain(
      mcp.experimental.tasks.callToolStream({ name: 'tap.test.fail', arguments: { input: { code: 'not a code' } } }, undefined, {
        task: {},
      }),
    );
    expect(statuses(refused).at(-1)).toBe('failed');
    const invalid = await mcp.experimental.tasks.getTaskResult(
      (refused[0] as { task: { taskId: string } }).task.taskId,
      CallToolResultSchema,
    );
    expect(invalid.isError).toBe(true);
    expect(text(invalid)).toMatch(/^INVALID_MESSAGE: /);
  });

  it('ends the MCP task cancelled when the agent cancels its TAP task, here closing the session (TAP-BRIDGE-150)', async () => {
    const { mcp, tap } = await mcpClient({ host });
    const { taskId } = await sleepingTask(mcp, 20_000);
    await tap.close();
    const result = await mcp.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    expect((await mcp.experimental.tasks.getTask(taskId)).status).toBe('cancelled');
    expect(result.isError).toBe(true);
    expect(result._meta?.['tap/bridge']).toMatchObject({ status: 'cancelled', error: { code: 'SHUTTING_DOWN' } });
  });

  it('moves the MCP task with its TAP task: input_required, then cancelled when the input cannot be asked for (TAP-BRIDGE-150, TAP-BRIDGE-179)', async () => {
    const { mcp, wire } = await mcpClient({ host, elicit: () => ({ action: 'accept', content: {} }) });
    const notified: string[] = [];
    mcp.setNotificationHandler(TaskStatusNotificationSchema, (n) => {
      notified.push(n.params.status);
    });
    const { taskId } = await askAsTask(mcp, { type: 'array' }, 'Which?');
    await expect.poll(() => notified.at(-1)).toBe('cancelled');
    // input_required, then cancelling (working by the table), then cancelled.
    expect(notified).toEqual(['input_required', 'working', 'cancelled']);
    expect(frames(wire, 'out', 'task.cancel')).toHaveLength(1);
    const result = await mcp.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    expect(text(result)).toMatch(/^cancelled: the agent asked for input whose schema MCP elicitation cannot express/);
  });

  it('asks for a plan approval of a task by an elicitation tied to it, the task input_required meanwhile (TAP-BRIDGE-180)', async () => {
    const asked: ElicitRequest[] = [];
    const { mcp } = await mcpClient({
      host,
      elicit: (r) => {
        asked.push(r);
        return { action: 'accept', content: { decision: 'approved' } };
      },
    });
    const messages = await drain(
      mcp.experimental.tasks.callToolStream({ name: 'tap.test.plan', arguments: { input: { plan: PLAN } } }, undefined, { task: {} }),
    );
    const taskId = (messages[0] as { task: { taskId: string } }).task.taskId;
    expect(statuses(messages)).toContain('input_required');
    expect(asked[0]!.params._meta?.[RELATED_TASK]).toEqual({ taskId });
    expect(resultOf(messages).structuredContent).toEqual({ executed: ['write a', 'write b'] });
  });

  it('answers a plain tools/call as before, with no MCP task, and an unknown tool with task as -32602 (TAP-BRIDGE-181)', async () => {
    const { mcp, wire } = await mcpClient({ host });
    const plain = await mcp.callTool({ name: 'tap.test.sleep', arguments: { input: { ms: 1 } } });
    expect(plain).toMatchObject({ structuredContent: { slept_ms: 1 }, _meta: { 'tap/bridge': { status: 'completed' } } });
    expect(plain).not.toHaveProperty('task');
    expect((await mcp.experimental.tasks.listTasks()).tasks).toEqual([]);
    const unknown = await drain(mcp.experimental.tasks.callToolStream({ name: 'no.such.tool', arguments: {} }, undefined, { task: {} }));
    expect(unknown).toEqual([{ type: 'error', error: expect.objectContaining({ code: -32602 }) }]);
    expect(requests(wire)).toHaveLength(1);
  });
});

describe('the task store of the MCP facade (spec: bridge-mcp-host#mcp-tasks)', () => {
  const request = { method: 'tools/call', params: { name: 'tap.test.echo' } };

  it('keeps a task from other MCP sessions, and keeps it past its ttl until its TAP task ended (TAP-BRIDGE-182)', async () => {
    vi.useFakeTimers();
    const forgotten: string[] = [];
    const store = new FacadeTaskStore(
      10,
      () => {},
      (id) => forgotten.push(id),
    );
    try {
      const task = await store.createTask({ ttl: 1_000 }, 1, request, 'session-a');
      expect(await store.getTask(task.taskId, 'session-b')).toBeNull();
      expect((await store.listTasks(undefined, 'session-b')).tasks).toEqual([]);
      await expect(store.getTaskResult(task.taskId, 'session-b')).rejects.toThrow(/no task/);
      vi.advanceTimersByTime(5_000);
      expect((await store.getTask(task.taskId, 'session-a'))?.status).toBe('working');
      store.end(task.taskId, 'completed', { content: [] });
      expect((await store.getTask(task.taskId, 'session-a'))?.status).toBe('completed');
      vi.advanceTimersByTime(1);
      expect(await store.getTask(task.taskId, 'session-a')).toBeNull();
      expect(forgotten).toEqual([task.taskId]);
      const long = await store.createTask({ ttl: 10 * TASK_MAX_TTL_MS }, 2, request, 'session-a');
      expect(long.ttl).toBe(TASK_MAX_TTL_MS);
    } finally {
      store.close();
      vi.useRealTimers();
    }
  });

  it('lists a hundred tasks a page, its cursor the last task of the page (TAP-BRIDGE-182)', async () => {
    const store = new FacadeTaskStore(10);
    const ids: string[] = [];
    for (let i = 0; i < 150; i++) ids.push((await store.createTask({}, i, request)).taskId);
    const first = await store.listTasks();
    expect(first.tasks.map((t) => t.taskId)).toEqual(ids.slice(0, 100));
    expect(first.nextCursor).toBe(ids[99]);
    const second = await store.listTasks(first.nextCursor);
    expect(second.tasks.map((t) => t.taskId)).toEqual(ids.slice(100));
    expect(second.nextCursor).toBeUndefined();
    await expect(store.listTasks('no-such-task')).rejects.toThrow(/list again without a cursor/);
    store.close();
  });
});
