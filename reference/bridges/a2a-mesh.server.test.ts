/**
 * The A2A facade in front of a mesh on a real nats-server (registry and agents), driven by
 * @a2a-js/sdk's own client: the card's skills are the live agents' capabilities and follow an
 * agent joining and leaving; send, stream, resubscribe and cancel go as mesh tasks routed to the
 * agents that offer them; an input request is not carried and cancels its task; GetTask and ListTasks
 * answer the facade's own tasks (spec: bridge-a2a#mesh).
 */
import type { Message, StreamResponse, Task } from '@a2a-js/sdk';
import { ClientFactory } from '@a2a-js/sdk/client';
import { describe, expect, it } from 'vitest';
import type { TaskContext } from '../agent/index.ts';
import { TWO_FILE_PLAN as PLAN } from '../agent/peer.testkit.ts';
import { joinMesh } from '../mesh/join.ts';
import { meshTestBed, testCapability } from '../mesh/mesh.testkit.ts';
import { NO_NATS_SERVER, natsServerInstalled } from '../transports/nats/nats-server.testkit.ts';
import { A2A_STATE, dataPart } from './a2a-mapping.ts';
import { serveA2a } from './a2a-server.ts';
import { outputEvents, userMessage } from './a2a.testkit.ts';
import { connectMeshTarget, type FacadeSubmitOptions, type MeshTarget } from './mesh-target.ts';

if (!natsServerInstalled) console.warn(NO_NATS_SERVER);

/** A request of one user message whose DataPart names the capability and its input. */
function send(capability: string, input: unknown, extra: Partial<Message> = {}) {
  return { tenant: '', message: userMessage(capability, input, extra), configuration: undefined, metadata: undefined };
}

function asTask(r: Message | Task): Task {
  expect(r).toHaveProperty('status');
  return r as Task;
}

/** The value of a task's result artifact. */
function resultOf(task: Task): unknown {
  const c = task.artifacts.find((a) => a.name === 'result')?.parts[0]?.content;
  return c?.$case === 'data' ? c.value : undefined;
}

const outputs = outputEvents;

describe.skipIf(!natsServerInstalled)('tap-bridge a2a --mesh (spec: bridge-a2a#mesh)', () => {
  const bed = meshTestBed();

  it('lists the live capabilities as skills and follows agents joining and leaving; sends, streams, resubscribes, cancels and decides plans through mesh tasks; cancels a task that asks for input; lists its own tasks', async () => {
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const first = await bed.agent('mesh.first', {
      'demo.trace': {
        capability: testCapability('demo.trace', 'Says the trace context its task came with.'),
        handler: async (_input: unknown, ctx: TaskContext) => ({ traceparent: ctx.traceContext?.traceparent ?? null }),
      },
    });
    // A heartbeat of 1 s (entries live 3 s): a loaded machine that stalls this process a moment does not make an agent lost.
    await joinMesh(first.agent, { url: bed.url(), heartbeatMs: 1000 });

    // The facade's mesh, with each submission's options kept to see what it passes on.
    const mesh = await connectMeshTarget(bed.url(), 'tap-bridge-a2a', [
      'tap.test.echo',
      'tap.test.sleep',
      'tap.test.ask',
      'tap.test.stream',
      'tap.test.plan',
      'demo.trace',
      'demo.whoami',
    ]);
    const submitted: FacadeSubmitOptions[] = [];
    const target: MeshTarget = {
      get agent() {
        return mesh.agent;
      },
      submit: (capability, input, options = {}) => {
        submitted.push(options);
        return mesh.submit(capability, input, options);
      },
      close: () => mesh.close(),
    };
    const facade = await serveA2a(target, { port: 0 });
    try {
      const skills = async () =>
        ((await (await fetch(`${facade.url}.well-known/agent-card.json`)).json()) as { skills: Array<{ id: string }> }).skills
          .map((s) => s.id)
          .sort();
      // Only the names asked for that a live agent offers.
      expect(await skills()).toEqual(['demo.trace', 'tap.test.ask', 'tap.test.echo', 'tap.test.plan', 'tap.test.sleep', 'tap.test.stream']);

      // A second agent joins with a capability of its own: the card fetched next has it.
      const second = await bed.agent('mesh.second', {
        'demo.whoami': {
          capability: testCapability('demo.whoami', 'Says which agent ran the task.'),
          handler: async () => ({ agent: 'mesh.second' }),
        },
      });
      const membership = await joinMesh(second.agent, { url: bed.url(), heartbeatMs: 1000 });
      await expect.poll(skills, { timeout: 10_000, interval: 100 }).toContain('demo.whoami');
      const client = await new ClientFactory().createFromUrl(facade.url);

      // A message is a mesh task on an agent that offers its capability.
      const who = asTask(await client.sendMessage(send('demo.whoami', {})));
      expect(who.status?.state).toBe(A2A_STATE.COMPLETED);
      expect(resultOf(who)).toEqual({ agent: 'mesh.second' });

      // The messageId is the idempotency key, the trace context goes on to the agent, a repeated messageId gets the same task.
      const traced = send('demo.trace', {}, { metadata: { traceparent } });
      const tracedTask = asTask(await client.sendMessage(traced));
      expect(submitted.at(-1)).toMatchObject({ idempotencyKey: traced.message.messageId, metadata: { traceparent } });
      expect((resultOf(tracedTask) as { traceparent: string }).traceparent.split('-')[1]).toBe(traceparent.split('-')[1]);
      expect(asTask(await client.sendMessage(traced)).id).toBe(tracedTask.id);
      expect(submitted).toHaveLength(2);

      // A stream gets the task's events with their sequences; a resubscription after sequence N gets only those after it.
      const streamed: StreamResponse[] = [];
      for await (const e of client.sendMessageStream(send('tap.test.stream', { count: 4, interval_ms: 10 }))) streamed.push(e);
      expect(outputs(streamed).map(([, i]) => i)).toEqual([0, 1, 2, 3]);
      const last = streamed.at(-1)!.payload;
      expect(last?.$case === 'statusUpdate' && last.value.status?.state).toBe(A2A_STATE.COMPLETED);
      const streamId = streamed[0]!.payload?.$case === 'task' ? streamed[0]!.payload.value.id : '';
      const [second1] = outputs(streamed)[1]!;
      const rest: StreamResponse[] = [];
      for await (const e of client.resubscribeTask(
        { tenant: '', id: streamId },
        { serviceParameters: { 'tap-last-sequence': String(second1) } },
      ))
        rest.push(e);
      expect(outputs(rest).map(([, i]) => i)).toEqual([2, 3]);

      // CancelTask reaches the agent that runs the task.
      const running = () => first.agent.stats().activeTasks + second.agent.stats().activeTasks;
      const sleeping = asTask(
        await client.sendMessage({
          ...send('tap.test.sleep', { ms: 60_000 }),
          configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: true },
        }),
      );
      await expect.poll(running, { timeout: 10_000, interval: 50 }).toBe(1);
      expect((await client.cancelTask({ tenant: '', id: sleeping.id, metadata: undefined })).status?.state).toBe(A2A_STATE.CANCELED);
      await expect.poll(running, { timeout: 10_000, interval: 50 }).toBe(0);

      // No input request reaches the A2A client over a mesh: the task is cancelled and its status says why.
      const asked = asTask(await client.sendMessage(send('tap.test.ask', { schema: { type: 'string' } })));
      expect(asked.status?.state).toBe(A2A_STATE.CANCELED);
      expect(asked.status?.message?.parts[0]?.content).toMatchObject({
        $case: 'text',
        value: expect.stringMatching(/^cancelled: .*asked for input.*over a mesh/),
      });

      // A plan waits for its client as over a session; the decision goes to the agent that holds the task.
      const waiting = asTask(await client.sendMessage(send('tap.test.plan', { plan: PLAN })));
      expect(waiting.status?.state).toBe(A2A_STATE.AUTH_REQUIRED);
      const approved = send('', null, { taskId: waiting.id, parts: [dataPart({ decision: 'approved' })] });
      const done = asTask(await client.sendMessage(approved));
      expect(done.status?.state).toBe(A2A_STATE.COMPLETED);
      expect(resultOf(done)).toEqual({ executed: ['write a', 'write b'] });

      // ListTasks lists the tasks this facade holds, in the order it started them.
      const list = (pageToken: string) =>
        client.listTasks({
          tenant: '',
          contextId: '',
          status: A2A_STATE.CANCELED,
          pageSize: 1,
          pageToken,
          historyLength: undefined,
          statusTimestampAfter: undefined,
          includeArtifacts: false,
        });
      const listed = await list('');
      expect(listed.tasks.map((t) => t.id)).toEqual([sleeping.id]);
      expect(listed.totalSize).toBe(2);
      const next = await list(listed.nextPageToken);
      expect(next.tasks.map((t) => t.id)).toEqual([asked.id]);
      expect(next.nextPageToken).toBe('');
      await expect(list('not-a-token-of-this-facade')).rejects.toThrow(/names no task this facade holds/);

      // GetTask answers the facade's own tasks, and no other id.
      expect((await client.getTask({ tenant: '', id: who.id })).status?.state).toBe(A2A_STATE.COMPLETED);
      await expect(client.getTask({ tenant: '', id: 'someone-elses' })).rejects.toThrow(/no task someone-elses here/);

      // The agent leaves: its capability leaves the card.
      await membership.leave();
      await expect.poll(skills, { timeout: 10_000, interval: 100 }).not.toContain('demo.whoami');
    } finally {
      await facade.close();
      await target.close();
    }
  }, 60_000);
});
