/**
 * The A2A facade driven by @a2a-js/sdk's own client over HTTP on 127.0.0.1, in front of the
 * reference agent runtime with the conformance capabilities (spec: bridge-a2a).
 */
import type { Message, StreamResponse, Task } from '@a2a-js/sdk';
import { ClientFactory, type Client } from '@a2a-js/sdk/client';
import { describe, expect, it } from 'vitest';
import type { WireEntry } from '../client/index.ts';
import { inMemory } from '../client/reference-agent.testkit.ts';
import { A2A_STATE, dataPart, textPart } from './a2a-mapping.ts';
import { outputEvents, userMessage } from './a2a.testkit.ts';
import { serveA2a } from './a2a-server.ts';
import { TWO_FILE_PLAN as PLAN } from '../agent/peer.testkit.ts';

const { cleanups, agentWith, overMemory } = inMemory();

const message = userMessage;

function send(m: Message) {
  return { tenant: '', message: m, configuration: undefined, metadata: undefined };
}

/** An A2A SDK client of a facade in front of a reference agent. */
async function a2aClient(): Promise<{ client: Client; url: string; wire: WireEntry[] }> {
  const { client: tap, wire } = await overMemory(agentWith());
  const facade = await serveA2a(tap, { port: 0 });
  cleanups.push(() => facade.close());
  return { client: await new ClientFactory().createFromUrl(facade.url), url: facade.url, wire };
}

function stateOf(e: StreamResponse): number | undefined {
  const p = e.payload;
  if (p?.$case === 'task') return p.value.status?.state;
  if (p?.$case === 'statusUpdate') return p.value.status?.state;
  return undefined;
}

/** The output indexes the artifact events of a stream carry. */
function outputs(events: StreamResponse[]): number[] {
  return outputEvents(events).map(([, index]) => index);
}

function asTask(r: Message | Task): Task {
  expect(r).toHaveProperty('status');
  return r as Task;
}

describe('a TAP agent as an A2A server (spec: bridge-a2a)', () => {
  it('serves an agent card whose skills are the capabilities (spec: bridge-a2a#card)', async () => {
    const { url } = await a2aClient();
    const card = (await (await fetch(`${url}.well-known/agent-card.json`)).json()) as {
      skills: Array<{ id: string }>;
      capabilities: { streaming: boolean };
    };
    expect(card.skills.map((s) => s.id)).toContain('tap.test.echo');
    expect(card.capabilities.streaming).toBe(true);
  });

  it('sends a message to a capability and gets the completed task with its result artifact; a resent messageId gets the same task (spec: bridge-a2a#idempotency)', async () => {
    const { client } = await a2aClient();
    const m = message('tap.test.counter', { key: 'a2a-once' });
    const task = asTask(await client.sendMessage(send(m)));
    expect(task.status?.state).toBe(A2A_STATE.COMPLETED);
    const result = task.artifacts.find((a) => a.name === 'result')!;
    expect(result.parts[0]!.content).toEqual({ $case: 'data', value: { key: 'a2a-once', count: 1 } });
    const again = asTask(await client.sendMessage(send(m)));
    expect(again.id).toBe(task.id);
    const other = asTask(await client.sendMessage(send(message('tap.test.counter', { key: 'a2a-once' }))));
    expect(other.artifacts.find((a) => a.name === 'result')!.parts[0]!.content).toEqual({
      $case: 'data',
      value: { key: 'a2a-once', count: 2 },
    });
    expect((await client.getTask({ tenant: '', id: task.id })).status?.state).toBe(A2A_STATE.COMPLETED);
  });

  it('sends the messageId as the idempotency key and the traceparent of the metadata as the trace context (spec: bridge-a2a#trace)', async () => {
    const { client, wire } = await a2aClient();
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const m = message('tap.test.echo', 1, { metadata: { traceparent } });
    asTask(await client.sendMessage(send(m)));
    const request = wire
      .map((e) => JSON.parse(e.text) as { type: string; idempotency_key?: string; metadata?: Record<string, unknown> })
      .find((f) => f.type === 'task.request')!;
    expect(request.metadata?.traceparent).toBe(traceparent);
    expect(request.idempotency_key).toBe(m.messageId);
  });

  it('refuses a message that names no capability, saying how to name one (spec: bridge-a2a#capability)', async () => {
    const { client } = await a2aClient();
    await expect(client.sendMessage(send(message('x', null, { parts: [textPart('hello')] })))).rejects.toThrow(/names no capability/);
    const failed = asTask(await client.sendMessage(send(message('tap.test.fail', { code: 'CAPABILITY_FAILED', message: 'no disk' }))));
    expect(failed.status?.state).toBe(A2A_STATE.FAILED);
    expect(failed.status?.message?.parts[0]?.content).toEqual({ $case: 'text', value: 'CAPABILITY_FAILED: no disk' });
  });

  it('streams the TAP events, and a client that resubscribes after a dropped stream loses none (spec: bridge-a2a#resubscribe)', async () => {
    const { client } = await a2aClient();
    const controller = new AbortController();
    const first: StreamResponse[] = [];
    let taskId = '';
    let last = 0;
    for await (const e of client.sendMessageStream(send(message('tap.test.stream', { count: 8, interval_ms: 40 })), {
      signal: controller.signal,
    })) {
      first.push(e);
      if (e.payload?.$case === 'task') taskId = e.payload.value.id;
      const meta = e.payload?.$case === 'artifactUpdate' || e.payload?.$case === 'statusUpdate' ? e.payload.value.metadata : undefined;
      if (typeof meta?.['tap/sequence'] === 'number') last = meta['tap/sequence'] as number;
      if (outputs(first).length === 2) break;
    }
    controller.abort();
    expect(first[0]!.payload?.$case).toBe('task');
    await new Promise((r) => setTimeout(r, 150));
    const rest: StreamResponse[] = [];
    for await (const e of client.resubscribeTask({ tenant: '', id: taskId }, { serviceParameters: { 'tap-last-sequence': String(last) } }))
      rest.push(e);
    expect(rest[0]!.payload?.$case).toBe('task');
    expect([...outputs(first), ...outputs(rest)]).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(stateOf(rest[rest.length - 1]!)).toBe(A2A_STATE.COMPLETED);
  });

  it('cancels a running task with CancelTask (spec: bridge-a2a#cancel)', async () => {
    const { client } = await a2aClient();
    const started = asTask(
      await client.sendMessage({
        ...send(message('tap.test.sleep', { ms: 20_000 })),
        configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: true },
      }),
    );
    const cancelled = await client.cancelTask({ tenant: '', id: started.id, metadata: undefined });
    expect(cancelled.status?.state).toBe(A2A_STATE.CANCELED);
    await expect(client.cancelTask({ tenant: '', id: started.id, metadata: undefined })).rejects.toThrow(/has ended/);
  });

  it('asks for input as INPUT_REQUIRED and takes the answer as a message to the task (spec: bridge-a2a#input)', async () => {
    const { client } = await a2aClient();
    const asked = asTask(
      await client.sendMessage(send(message('tap.test.ask', { schema: { type: 'integer', minimum: 1 }, prompt: 'How many?' }))),
    );
    expect(asked.status?.state).toBe(A2A_STATE.INPUT_REQUIRED);
    expect(asked.status?.message?.parts[0]?.content).toEqual({ $case: 'text', value: 'How many?' });
    await expect(client.sendMessage(send(message('', null, { taskId: asked.id, parts: [dataPart(0)] })))).rejects.toThrow(
      /refused the answer/,
    );
    const done = asTask(await client.sendMessage(send(message('', null, { taskId: asked.id, parts: [textPart('3')] }))));
    expect(done.status?.state).toBe(A2A_STATE.COMPLETED);
    expect(done.artifacts.find((a) => a.name === 'result')!.parts[0]!.content).toEqual({ $case: 'data', value: { answer: 3 } });
  });

  it('asks for plan approval as AUTH_REQUIRED and runs the plan on a message that approves it (spec: bridge-a2a#input)', async () => {
    const { client } = await a2aClient();
    const waiting = asTask(await client.sendMessage(send(message('tap.test.plan', { plan: PLAN }))));
    expect(waiting.status?.state).toBe(A2A_STATE.AUTH_REQUIRED);
    const plan = waiting.status?.message?.parts[1]?.content;
    expect(plan).toMatchObject({ $case: 'data', value: { plan: { intent: 'Write two files.' } } });
    const done = asTask(
      await client.sendMessage(send(message('', null, { taskId: waiting.id, parts: [dataPart({ decision: 'approved' })] }))),
    );
    expect(done.status?.state).toBe(A2A_STATE.COMPLETED);
    expect(done.artifacts.find((a) => a.name === 'result')!.parts[0]!.content).toEqual({
      $case: 'data',
      value: { executed: ['write a', 'write b'] },
    });
  });

  it("answers ListTasks from TAP's task listing: the facade's own tasks only, paged by TAP's cursor, filtered by state (spec: bridge-a2a#list)", async () => {
    const agent = agentWith();
    const { client: tap } = await overMemory(agent);
    const { client: someoneElse } = await overMemory(agent, { agentId: 'someone-else' });
    const facade = await serveA2a(tap, { port: 0 });
    cleanups.push(() => facade.close());
    const client = await new ClientFactory().createFromUrl(facade.url);
    const sent: string[] = [];
    for (let i = 0; i < 3; i++) sent.push(asTask(await client.sendMessage(send(message('tap.test.echo', i)))).id);
    sent.push(asTask(await client.sendMessage(send(message('tap.test.fail', { code: 'CAPABILITY_FAILED' })))).id);
    const theirs = someoneElse.submit('tap.test.echo', "not the facade's");
    await theirs.result;

    const list = (extra: Partial<Parameters<Client['listTasks']>[0]> = {}) =>
      client.listTasks({
        tenant: '',
        contextId: '',
        status: 0,
        pageSize: 3,
        pageToken: '',
        historyLength: undefined,
        statusTimestampAfter: undefined,
        includeArtifacts: false,
        ...extra,
      });
    const first = await list();
    expect(first.tasks.map((t) => t.id)).toEqual(sent.slice(0, 3));
    expect(first.totalSize).toBe(4);
    expect(first.tasks[0]!.artifacts).toEqual([]);
    const second = await list({ pageToken: first.nextPageToken });
    expect(second.tasks.map((t) => t.id)).toEqual(sent.slice(3));
    expect(second.nextPageToken).toBe('');
    expect([...first.tasks, ...second.tasks].map((t) => t.id)).not.toContain(theirs.taskId);

    // FAILED stands for TAP's failed and timed_out, filtered by the facade; COMPLETED is TAP's own filter.
    const failed = await list({ status: A2A_STATE.FAILED });
    expect(failed.tasks.map((t) => [t.id, t.status?.state])).toEqual([[sent[3], A2A_STATE.FAILED]]);
    expect(failed.totalSize).toBe(1);
    const completed = await list({ status: A2A_STATE.COMPLETED, pageSize: 10, includeArtifacts: true });
    expect(completed.tasks.map((t) => t.id)).toEqual(sent.slice(0, 3));
    expect(completed.tasks[2]!.artifacts.find((a) => a.name === 'result')!.parts[0]!.content).toEqual({ $case: 'data', value: 2 });

    await expect(list({ pageToken: 'not-a-cursor' })).rejects.toThrow(/INVALID_CURSOR/);
  });

  it('refuses ListTasks over a session of TAP 1.0, sending no task.list (spec: bridge-a2a#list)', async () => {
    const { client: tap, wire } = await overMemory(agentWith(), { versions: ['1.0'] });
    const facade = await serveA2a(tap, { port: 0 });
    cleanups.push(() => facade.close());
    const client = await new ClientFactory().createFromUrl(facade.url);
    const request = { tenant: '', contextId: '', status: 0, pageToken: '', statusTimestampAfter: undefined };
    await expect(client.listTasks(request)).rejects.toThrow(/ListTasks needs TAP 1\.1's task listing/);
    expect(wire.some((e) => e.text.includes('"task.list"'))).toBe(false);
  });
});
