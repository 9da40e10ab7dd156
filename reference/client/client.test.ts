import { describe, expect, it } from 'vitest';
import type { TapMessage } from '../../schemas/src/index.ts';
import { createMemoryPair } from '../transports/index.ts';
import { connect, type ConnectOptions } from './index.ts';
import { ScriptedAgent, type Script } from './scripted-agent.testkit.ts';

const base: ConnectOptions = { agentId: 'test-requester', requires: ['demo.echo'] };

async function setup(script: Script, options: Partial<ConnectOptions> = {}) {
  const [a, b] = createMemoryPair();
  const agent = new ScriptedAgent(b, { script });
  const client = await connect(a, { ...base, ...options });
  return { agent, client };
}

/** Answers demo.echo with accepted, running, one output event and the result. */
const echo: Script = (msg, agent) => {
  if (msg.type !== 'task.request') return;
  const id = msg.task_id!;
  agent.accept(msg);
  agent.event(id, { kind: 'state', state: 'running' });
  agent.event(id, { kind: 'output', data: msg.payload.input });
  agent.result(id, { status: 'completed', output: msg.payload.input });
};

describe('client over a scripted agent', () => {
  it('completes the four-step handshake and reports what the ack fixed', async () => {
    const { agent, client } = await setup(echo);
    expect(agent.received.map((m) => m.type)).toEqual(['handshake.init', 'handshake.ready']);
    expect(client.handshake.agentId).toBe('scripted-agent');
    expect(client.handshake.granted).toEqual(['demo.echo']);
    expect(agent.violations).toEqual([]);
    await client.close();
  });

  it('submits a task and resolves accepted, events in order, and the result', async () => {
    const { agent, client } = await setup(echo);
    const h = client.submit('demo.echo', { hello: 'world' });
    const accepted = await h.accepted;
    expect(accepted.taskId).toBe(h.taskId);
    const events: TapMessage[] = [];
    for await (const e of h.events) events.push(e);
    expect(events.map((e) => e.sequence)).toEqual([2, 3]);
    expect(await h.result).toEqual({ status: 'completed', output: { hello: 'world' } });
    expect(h.state).toBe('completed');
    const req = agent.of('task.request')[0]!;
    expect(req.idempotency_key).toBe(h.idempotencyKey);
    expect(req.metadata?.attempt).toBe(1);
    expect(agent.violations).toEqual([]);
    await client.close();
  });

  it('delivers duplicated and reordered stream messages once and in order (spec: tasks#deduplication)', async () => {
    const { client } = await setup((msg, agent) => {
      if (msg.type !== 'task.request') return;
      const id = msg.task_id!;
      const accepted = agent.accept(msg);
      agent.raw(JSON.stringify(accepted));
      // Build three events, send them out of order and twice.
      const frames: string[] = [];
      const saved = agent.raw.bind(agent);
      agent.raw = (t) => void frames.push(t);
      agent.event(id, { kind: 'state', state: 'running' });
      agent.event(id, { kind: 'progress', percent: 50 });
      agent.result(id, { status: 'completed', output: 1 });
      agent.raw = saved;
      for (const f of [frames[1]!, frames[0]!, frames[1]!, frames[2]!, frames[0]!]) agent.raw(f);
    });
    const h = client.submit('demo.echo', 1);
    await h.result;
    expect(h.log.map((m) => m.sequence)).toEqual([1, 2, 3, 4]);
    await client.close();
  });
});

describe('client requests', () => {
  it('cancels a running task: task.cancel gets a snapshot, the result ends cancelled', async () => {
    const { agent, client } = await setup((msg, a) => {
      if (msg.type === 'task.request') {
        a.accept(msg);
        a.event(msg.task_id!, { kind: 'state', state: 'running' });
      } else if (msg.type === 'task.cancel') {
        a.snapshot(msg, {
          state: 'running',
          capability: 'demo.slow',
          last_sequence: 2,
          created_at: msg.timestamp,
          updated_at: msg.timestamp,
        });
        a.event(msg.task_id!, { kind: 'state', state: 'cancelling' });
        a.result(msg.task_id!, { status: 'cancelled' });
      }
    });
    const h = client.submit('demo.slow', { ms: 10_000 });
    await h.accepted;
    const snap = await h.cancel('no longer needed');
    expect(snap.state).toBe('running');
    expect(await h.result).toEqual({ status: 'cancelled' });
    expect(agent.of('task.cancel')[0]!.payload).toEqual({ reason: 'no longer needed' });
    expect(h.log.map((m) => (m.type === 'task.event' ? m.payload.state : m.type))).toEqual([
      'task.accepted',
      'running',
      'cancelling',
      'task.result',
    ]);
    await client.close();
  });

  it('answers plan.submit through the onPlan callback with plan.decision (spec: plans#decision)', async () => {
    const plan = {
      plan_id: 'plan-1',
      intent: 'write files',
      steps: [{ action: 'write', target: 'src/a.ts', expected_output: 'a file', reversible: true }],
      rollback: 'delete src/a.ts',
      estimated_cost: { seconds: 1 },
      risk_level: 'low' as const,
    };
    const { agent, client } = await setup((msg, a) => {
      if (msg.type === 'task.request') {
        a.accept(msg);
        a.event(msg.task_id!, { kind: 'state', state: 'running' });
        a.send('plan.submit', { plan }, { task_id: msg.task_id! });
      } else if (msg.type === 'plan.decision') {
        a.snapshot(msg, {
          state: 'awaiting_approval',
          capability: 'demo.plan',
          last_sequence: 3,
          created_at: msg.timestamp,
          updated_at: msg.timestamp,
          plan: { plan_id: 'plan-1', state: 'pending' },
        });
        a.event(msg.task_id!, { kind: 'state', state: 'running' });
        a.result(msg.task_id!, { status: 'completed', output: { executed: ['write'] } });
      }
    });
    const seen: string[] = [];
    const h = client.submit(
      'demo.plan',
      {},
      {
        onPlan: async (p) => {
          seen.push(p.plan.plan_id);
          return { decision: 'approved', feedback: 'go ahead' };
        },
      },
    );
    expect(await h.result).toEqual({ status: 'completed', output: { executed: ['write'] } });
    expect(seen).toEqual(['plan-1']);
    expect(agent.of('plan.decision')[0]!.payload).toEqual({ plan_id: 'plan-1', decision: 'approved', feedback: 'go ahead' });
    expect(agent.violations).toEqual([]);
    await client.close();
  });

  it("emits 'plan' when the task has no callback, and handle.decide answers it", async () => {
    const plan = {
      plan_id: 'plan-2',
      intent: 'x',
      steps: [{ action: 'a', target: 't', expected_output: 'o', reversible: false }],
      rollback: 'none',
      estimated_cost: {},
      risk_level: 'high' as const,
    };
    const { client } = await setup((msg, a) => {
      if (msg.type === 'task.request') {
        a.accept(msg);
        a.event(msg.task_id!, { kind: 'state', state: 'running' });
        a.send('plan.submit', { plan }, { task_id: msg.task_id! });
      } else if (msg.type === 'plan.decision') {
        a.snapshot(msg, {
          state: 'awaiting_approval',
          capability: 'demo.plan',
          last_sequence: 3,
          created_at: msg.timestamp,
          updated_at: msg.timestamp,
        });
        a.result(msg.task_id!, { status: 'failed', error: { code: 'PLAN_REJECTED', message: 'rejected', retryable: false } });
      }
    });
    client.on('plan', ({ handle, plan: p }) => void handle.decide(p.plan.plan_id, 'rejected'));
    const h = client.submit('demo.plan', {});
    const r = await h.result;
    expect(r.status).toBe('failed');
    expect(r.error?.code).toBe('PLAN_REJECTED');
    await client.close();
  });

  it('retries a BUSY refusal with a new task_id and the same idempotency_key (spec: tasks#retries)', async () => {
    let refusals = 2;
    const { agent, client } = await setup(
      (msg, a) => {
        if (msg.type !== 'task.request') return;
        if (refusals-- > 0) return a.error(msg, 'BUSY', 'too many tasks');
        echo(msg, a);
      },
      { retry: { baseMs: 1, maxMs: 5 } },
    );
    const h = client.submit('demo.echo', 'x');
    expect((await h.result).status).toBe('completed');
    const reqs = agent.of('task.request');
    expect(reqs).toHaveLength(3);
    expect(new Set(reqs.map((r) => r.task_id)).size).toBe(3);
    expect(new Set(reqs.map((r) => r.idempotency_key)).size).toBe(1);
    expect(reqs.map((r) => r.metadata?.attempt)).toEqual([1, 2, 3]);
    expect(h.taskId).toBe(reqs[2]!.task_id);
    await client.close();
  });

  it('never retries an error that is not retryable', async () => {
    const { agent, client } = await setup(
      (msg, a) => {
        if (msg.type === 'task.request') a.error(msg, 'CAPABILITY_NOT_SUPPORTED');
      },
      { retry: { baseMs: 1 } },
    );
    const h = client.submit('demo.nothing', 1);
    await expect(h.accepted).rejects.toMatchObject({ code: 'CAPABILITY_NOT_SUPPORTED' });
    await expect(h.result).rejects.toMatchObject({ code: 'CAPABILITY_NOT_SUPPORTED' });
    expect(agent.of('task.request')).toHaveLength(1);
    await client.close();
  });

  it('gives up after the retry budget and rejects with the last retryable error', async () => {
    const { agent, client } = await setup(
      (msg, a) => {
        if (msg.type === 'task.request') a.error(msg, 'RATE_LIMITED');
      },
      { retry: { attempts: 3, baseMs: 1, maxMs: 2 } },
    );
    const h = client.submit('demo.echo', 1);
    await expect(h.result).rejects.toMatchObject({ code: 'RATE_LIMITED', retryable: true });
    expect(agent.of('task.request')).toHaveLength(3);
    await client.close();
  });

  it('retries a retryable ending under the same key; the retry names the old task (spec: idempotency#retryable-endings)', async () => {
    let first = true;
    const { agent, client } = await setup(
      (msg, a) => {
        if (msg.type !== 'task.request') return;
        if (first) {
          first = false;
          a.accept(msg);
          a.event(msg.task_id!, { kind: 'state', state: 'running' });
          a.result(msg.task_id!, { status: 'failed', error: { code: 'INTERNAL_ERROR', message: 'flaky', retryable: true } });
          return;
        }
        const old = agent.of('task.request')[0]!.task_id!;
        a.accept(msg, { previous_task_id: old });
        a.result(msg.task_id!, { status: 'completed', output: 'ok' });
      },
      { retry: { baseMs: 1, maxMs: 2 } },
    );
    const h = client.submit('demo.echo', 1);
    expect(await h.result).toEqual({ status: 'completed', output: 'ok' });
    const reqs = agent.of('task.request');
    expect(reqs[0]!.idempotency_key).toBe(reqs[1]!.idempotency_key);
    expect(h.attempts).toEqual([reqs[0]!.task_id, reqs[1]!.task_id]);
    // The retried attempt's failure is not part of the handle's stream; its events are.
    expect(h.log.filter((m) => m.type === 'task.result')).toHaveLength(1);
    await client.close();
  });

  it('does not retry a requester timeout: the outcome is indeterminate (spec: tasks#indeterminate)', async () => {
    const { agent, client } = await setup(() => {}, { params: { request_timeout_ms: 50 } });
    const h = client.submit('demo.echo', 1);
    await expect(h.result).rejects.toMatchObject({ code: 'REQUEST_TIMEOUT', indeterminate: true });
    expect(agent.of('task.request')).toHaveLength(1);
    await client.close();
  });

  it('follows the original task when a retry is answered with its snapshot (spec: tasks#idempotency)', async () => {
    const { agent, client } = await setup((msg, a) => {
      if (msg.type === 'task.request') {
        const original = agent.of('task.request').find((r) => r.idempotency_key === msg.idempotency_key)!;
        if (original !== msg) {
          a.snapshot(
            msg,
            {
              state: 'completed',
              capability: 'demo.echo',
              last_sequence: a.lastSequence(original.task_id!),
              created_at: original.timestamp,
              updated_at: original.timestamp,
              result: { status: 'completed', output: 'once' },
            },
            original.task_id!,
          );
          return;
        }
        a.accept(msg);
        a.event(msg.task_id!, { kind: 'output', data: 'once' });
        a.result(msg.task_id!, { status: 'completed', output: 'once' });
      }
    });
    const first = client.submit('demo.echo', 'once', { idempotencyKey: 'order-42' });
    await first.result;
    const again = client.submit('demo.echo', 'once', { idempotencyKey: 'order-42' });
    const accepted = await again.accepted;
    expect(accepted.taskId).toBe(first.taskId);
    expect(accepted.snapshot?.state).toBe('completed');
    expect(await again.result).toEqual({ status: 'completed', output: 'once' });
    expect(again.taskId).toBe(first.taskId);
    expect(again.log.map((m) => m.message_id)).toEqual(first.log.map((m) => m.message_id));
    await client.close();
  });

  it('asks for status and reports an unknown task as an error', async () => {
    const { client } = await setup((msg, a) => {
      if (msg.type === 'task.status') a.error(msg, 'UNKNOWN_TASK');
    });
    await expect(client.status('task-nope')).rejects.toMatchObject({ code: 'UNKNOWN_TASK' });
    await client.close();
  });
});
