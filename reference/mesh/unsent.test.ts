/**
 * A copy sent to an agent whose session is down, and counted lost before any session sent it:
 * the agent saw nothing, so the copy moves even though its capability has side effects, as
 * attempt 1 on the next agent, and no span of it is recorded (spec: mesh#moving, TAP-MESH-023).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { connectWith, type TapClient } from '../client/index.ts';
import { ScriptedAgent, scriptedCard } from '../client/scripted-agent.testkit.ts';
import { createMemoryPair, type Transport } from '../transports/index.ts';
import { Mesh } from './mesh.ts';
import type { MeshEntry } from './registry-view.ts';
import { MemoryRegistry, testEntry } from './mesh.testkit.ts';
import type { TraceRecord } from './trace.ts';

/** An agent played by a script: it accepts each task.request and, unless told to hold them, completes it. */
function scripted(agentId: string, complete: boolean): { agent?: ScriptedAgent; ends: Transport[]; open(): Transport } {
  const out: { agent?: ScriptedAgent; ends: Transport[]; open(): Transport } = {
    ends: [],
    open() {
      const [a, b] = createMemoryPair();
      out.ends.push(b);
      out.agent = new ScriptedAgent(b, {
        card: { agent_id: agentId },
        script: (msg, s) => {
          if (msg.type !== 'task.request') return;
          s.accept(msg);
          if (complete) s.result(msg.task_id!, { status: 'completed', output: { by: agentId } });
        },
      });
      return a;
    },
  };
  return out;
}

function entry(agentId: string, running: number): MeshEntry {
  return testEntry(agentId, { load: { running_tasks: running, max_concurrent_tasks: 4 } });
}

describe('a copy whose request never went out (spec: mesh#moving)', () => {
  const cleanups: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const fn of cleanups.splice(0)) await fn();
  });

  it('moves a copy with side effects that was counted lost before its request was sent, as attempt 1, with no span recorded (TAP-MESH-023)', async () => {
    const a = scripted('agent-a', false);
    const b = scripted('agent-b', true);
    let release!: () => void;
    const gone = new Promise<void>((r) => (release = r));
    const clients = new Map<string, TapClient>();
    const connect = async (e: MeshEntry): Promise<TapClient> => {
      const side = e.agent_id === 'agent-a' ? a : b;
      const factory = async (): Promise<Transport> => {
        if (side.agent && side === a) {
          // agent-a's process is gone: its reconnects get nowhere until the test ends.
          await gone;
          throw new Error('agent-a is gone');
        }
        return side.open();
      };
      const client = await connectWith(factory, {
        agentId: 'coordinator',
        target: e.agent_id,
        closeWaitMs: 20,
        reconnect: { attempts: 3, baseMs: 1, maxMs: 2 },
      });
      clients.set(e.agent_id, client);
      return client;
    };
    const registry = new MemoryRegistry();
    registry.put(() => entry('agent-a', 0));
    const records: TraceRecord[] = [];
    const mesh = new Mesh({ registry, agentId: 'coordinator', connect, traceSink: (r) => records.push(r) });
    cleanups.push(
      () => release(),
      () => mesh.close(),
    );

    // A first task goes out to agent-a and is accepted; then agent-a's transport drops.
    const first = await mesh.task('demo.plan', {});
    await first.accepted;
    registry.put(() => entry('agent-b', 3));
    const lost = new Promise((r) => clients.get('agent-a')!.on('lost', r));
    await a.ends[0]!.close({ code: 1006 });
    await lost;

    // agent-a is still the least loaded: the second task is made on its session while it is down.
    const second = await mesh.task('demo.plan', {}, { idempotencyKey: 'unsent-key' });
    await new Promise((r) => setTimeout(r, 5));
    // Its entry turns stale: the session is closed before the request ever went out.
    registry.expire('agent-a');

    // The first request was sent and no answer came: indeterminate, never moved (TAP-MESH-010).
    await expect(first.result).rejects.toMatchObject({ indeterminate: true });
    expect(first.hops.map((h) => h.agentId)).toEqual(['agent-a']);
    // The second was never sent: it moves to agent-b as attempt 1 with the same key, and completes.
    const result = await second.result;
    expect(result).toMatchObject({ status: 'completed', output: { by: 'agent-b' } });
    expect(second.hops.map((h) => [h.agentId, h.attempt])).toEqual([['agent-b', 1]]);
    const requests = b.agent!.of('task.request');
    expect(requests.map((m) => [m.idempotency_key, m.metadata?.attempt, m.metadata?.trace_id])).toEqual([
      ['unsent-key', 1, second.traceId],
    ]);
    expect(a.agent!.of('task.request').map((m) => m.idempotency_key)).not.toContain('unsent-key');
    // The requester ended only the first copy's span itself; the second began no span on agent-a.
    expect(records.map((r) => [r.type, r.trace_id, r.status])).toEqual([['mesh.ending', first.traceId, 'indeterminate']]);
  });
});

describe('a copy that reached no agent (spec: mesh#moving, TAP-MESH-024)', () => {
  it("says when it was the requester's own NATS connection that was down, not the agents", async () => {
    for (const [cause, advice] of [
      [
        new Error('connection disconnected'),
        /this requester's own connection to the NATS server is down, so the agents may well run: check the server$/,
      ],
      [new Error('connection refused'), /Check that these agents run; their registry entries stay listed until they expire$/],
    ] as const) {
      const registry = new MemoryRegistry();
      registry.put(() => entry('agent-a', 0));
      const mesh = new Mesh({
        registry,
        agentId: 'coordinator',
        unreachedWaitMs: 0,
        connect: () => Promise.reject(new Error('could not open a session', { cause })),
      });
      try {
        await expect((await mesh.task('demo.echo', {})).result).rejects.toMatchObject({
          code: 'UNREACHABLE',
          unsent: true,
          message: expect.stringMatching(advice),
        });
      } finally {
        await mesh.close();
      }
    }
  });
});
