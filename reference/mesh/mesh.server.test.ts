import { describe, expect, it } from 'vitest';
import type { TaskContext } from '../agent/index.ts';
import { natsServerInstalled, NO_NATS_SERVER } from '../transports/nats/nats-server.testkit.ts';
import type { Mesh } from './mesh.ts';
import { MemoryRegistry, meshTestBed, testCapability as capability, type MeshTestAgent } from './mesh.testkit.ts';
import type { TraceRecord } from './trace.ts';
import { lacks, needing } from '../../test/system-tools.testkit.ts';

if (!natsServerInstalled) console.warn(NO_NATS_SERVER);

/** A slow task with side effects: it cannot move once it may have begun. */
const slowEffect = {
  capability: capability('test.slow-effect', 'Waits ms, then records a side effect.', { side_effects: true }),
  handler: async (input: { ms: number }, ctx: TaskContext) => {
    await ctx.sleep(input.ms);
    return ctx.sideEffect(() => ({ done: true }));
  },
};

describe.skipIf(lacks('nats-server'))(needing('nats-server', 'the mesh requester (spec: mesh)'), () => {
  const bed = meshTestBed();

  const agent = (id: string, extra = {}): Promise<MeshTestAgent> => bed.agent(id, extra);

  const mesh = (registry: MemoryRegistry, records?: TraceRecord[], id = 'coordinator'): Mesh =>
    bed.mesh({ registry, agentId: id, ...(records ? { traceSink: (r) => records.push(r) } : {}) });

  it('routes least-loaded over one reused session per agent, and every message of a task carries its trace (TAP-MESH-003, TAP-MESH-019)', async () => {
    const registry = new MemoryRegistry();
    const a = await agent('ll.a');
    const b = await agent('ll.b');
    registry.put(a.entry);
    registry.put(b.entry);
    const m = mesh(registry);
    const tasks = await Promise.all([1, 2, 3, 4].map((i) => m.task('tap.test.sleep', { ms: 100 + i })));
    const results = await Promise.all(tasks.map((t) => t.result));
    expect(results.map((r) => r.status)).toEqual(['completed', 'completed', 'completed', 'completed']);
    expect(new Set(tasks.map((t) => t.agentId))).toEqual(new Set(['ll.a', 'll.b']));
    expect(m.sessions).toBe(2);
    for (const t of tasks) {
      for (const msg of t.log) {
        expect(msg.metadata?.trace_id).toBe(t.traceId);
        expect(msg.metadata?.span_id).toBe(t.hops[0]!.span.span_id);
      }
    }
  });

  it('moves a copy without side effects when its entry turns stale: same key, new task id, next attempt, new span (TAP-MESH-008, TAP-MESH-012, TAP-MESH-013, TAP-MESH-017)', async () => {
    const registry = new MemoryRegistry();
    const a = await agent('mv.a');
    const b = await agent('mv.b');
    registry.put(a.entry);
    const m = mesh(registry);
    const t = await m.task('tap.test.sleep', { ms: 600 });
    await t.accepted;
    expect(t.agentId).toBe('mv.a');
    registry.put(b.entry);
    registry.expire('mv.a');
    const result = await t.result;
    expect(result.status).toBe('completed');
    expect(t.hops.map((h) => [h.agentId, h.attempt])).toEqual([
      ['mv.a', 1],
      ['mv.b', 2],
    ]);
    expect(t.attempts[0]).not.toBe(t.attempts[1]);
    expect(t.hops[0]!.span.trace_id).toBe(t.hops[1]!.span.trace_id);
    expect(t.hops[0]!.span.span_id).not.toBe(t.hops[1]!.span.span_id);
    // The second agent saw the same key and attempt 2.
    const accepted = t.log.filter((x) => x.type === 'task.accepted');
    expect(accepted.length).toBe(2);
    expect(accepted[1]!.metadata?.span_id).toBe(t.hops[1]!.span.span_id);
  });

  it('does not move a copy with side effects whose agent was lost: it ends indeterminate after one attempt (TAP-MESH-009, TAP-MESH-010)', async () => {
    const registry = new MemoryRegistry();
    const a = await agent('se.a', { 'test.slow-effect': slowEffect });
    const b = await agent('se.b', { 'test.slow-effect': slowEffect });
    registry.put(a.entry);
    registry.put(b.entry);
    const m = mesh(registry);
    const t = await m.task('test.slow-effect', { ms: 1500 });
    await t.accepted;
    // The agent vanishes without a word: its connections drop, then its entry turns stale.
    const lost = bed.agents.find((x) => x.agent.card.agent_id === t.agentId)!;
    await lost.listener.close();
    registry.expire(t.agentId!);
    const error = await t.result.then(
      () => undefined,
      (e: Error & { indeterminate?: boolean }) => e,
    );
    expect(error?.indeterminate).toBe(true);
    expect(t.hops.length).toBe(1);
  });

  it('moves a handed-off copy that ended with a retryable SHUTTING_DOWN to another agent (TAP-MESH-011, spec: mesh#moving)', async () => {
    const registry = new MemoryRegistry();
    const a = await agent('ho.a');
    const b = await agent('ho.b');
    registry.put(a.entry);
    const m = mesh(registry);
    const t = await m.task('tap.test.sleep', { ms: 1500 });
    await t.accepted;
    registry.put(b.entry);
    registry.withdraw('ho.a');
    await a.agent.shutdown('leaving the mesh');
    const result = await t.result;
    expect(result.status).toBe('completed');
    expect(t.hops.map((h) => [h.agentId, h.outcome])).toEqual([
      ['ho.a', 'moved'],
      ['ho.b', 'completed'],
    ]);
    expect(t.log.some((x) => x.type === 'task.handoff')).toBe(true);
  });

  it('fans out to at most fanout_limit distinct agents, each copy with its own key, results per agent (TAP-MESH-005, TAP-MESH-007)', async () => {
    const registry = new MemoryRegistry();
    for (const id of ['fo.a', 'fo.b', 'fo.c']) registry.put((await agent(id)).entry);
    const m = mesh(registry);
    const s = await m.submit('tap.test.echo', { hello: 1 }, { route: 'broadcast', fanoutLimit: 2, idempotencyKey: 'fan' });
    const outcomes = await s.results;
    expect(outcomes.length).toBe(2);
    expect(new Set(outcomes.map((o) => o.agentId)).size).toBe(2);
    expect(outcomes.every((o) => o.result?.status === 'completed')).toBe(true);
    expect(s.copies.map((c) => c.idempotencyKey)).toEqual(['fan.1', 'fan.2']);
    const all = await m.submit('tap.test.echo', {}, { route: 'broadcast' });
    expect((await all.results).length).toBe(3);
  });

  it('a router passes the trace on with its own span as the parent, and the records show every hop (TAP-MESH-016, TAP-MESH-020, TAP-MESH-022)', async () => {
    const registry = new MemoryRegistry();
    const records: TraceRecord[] = [];
    const inner = mesh(registry, records, 'router');
    const router = {
      capability: capability('test.route', 'Forwards its input to tap.test.echo through the mesh.', { side_effects: false }),
      handler: async (input: unknown, ctx: TaskContext) => {
        const onward = await inner.task('tap.test.echo', input, { ...(ctx.trace ? { trace: ctx.trace } : {}) });
        return { forwarded: (await onward.result).output };
      },
    };
    registry.put((await agent('tr.router', { 'test.route': router })).entry);
    registry.put((await agent('tr.echo')).entry);
    const m = mesh(registry, records);
    const t = await m.task('test.route', { x: 1 });
    const result = await t.result;
    expect(result.output).toEqual({ forwarded: { x: 1 } });
    const mine = records.filter((r) => r.trace_id === t.traceId);
    const requests = mine.filter((r) => r.type === 'task.request' && r.dir === 'sent');
    expect(requests.map((r) => r.node)).toEqual(['coordinator', 'router']);
    expect(requests[1]!.parent_span_id).toBe(requests[0]!.span_id);
    expect(t.traceId).toMatch(/^[0-9a-f]{32}$/);
    const results = mine.filter((r) => r.type === 'task.result' && r.dir === 'received');
    expect(results.length).toBe(2);
    expect(results.every((r) => typeof r.duration_ms === 'number')).toBe(true);
  });

  it('puts the next attempt on the wire when a copy moves, and carries the trace on requests about the task (TAP-MESH-013, TAP-MESH-018)', async () => {
    const registry = new MemoryRegistry();
    const records: TraceRecord[] = [];
    const a = await agent('wire.a');
    const b = await agent('wire.b');
    registry.put(a.entry);
    const m = mesh(registry, records);
    const t = await m.task('tap.test.sleep', { ms: 800 });
    await t.accepted;
    await t.status();
    registry.put(b.entry);
    registry.expire('wire.a');
    await t.result;
    await t.status();
    const sent = records.filter((r) => r.dir === 'sent' && r.trace_id === t.traceId);
    expect(sent.filter((r) => r.type === 'task.request').map((r) => [r.peer, r.attempt, r.span_id])).toEqual([
      ['wire.a', 1, t.hops[0]!.span.span_id],
      ['wire.b', 2, t.hops[1]!.span.span_id],
    ]);
    expect(sent.filter((r) => r.type === 'task.status').map((r) => [r.peer, r.span_id])).toEqual([
      ['wire.a', t.hops[0]!.span.span_id],
      ['wire.b', t.hops[1]!.span.span_id],
    ]);
    // The stale entry closed the session; the agent, still alive, ended the task with a retryable SHUTTING_DOWN, hence the move.
    expect(records.some((r) => r.type === 'task.result' && r.dir === 'received' && r.peer === 'wire.a' && r.code === 'SHUTTING_DOWN')).toBe(
      true,
    );
  });

  it('lists its tasks at one agent through the session it holds, filtered as the agent filters, and refuses an agent its registry does not hold (spec: tasks#listing)', async () => {
    const registry = new MemoryRegistry();
    const a = await agent('list.a');
    const b = await agent('list.b');
    registry.put(a.entry);
    registry.put(b.entry);
    const m = mesh(registry);
    const done = await m.task('tap.test.echo', { n: 1 }, { route: 'round-robin' });
    await done.result;
    const running = await m.task('tap.test.sleep', { ms: 20_000 });
    const [{ taskId: doneId }, { taskId: runningId }] = await Promise.all([done.accepted, running.accepted]);
    const at = (agentId: string | undefined) => m.listTasks(agentId!);
    const listed = new Map([...(await at('list.a')).tasks, ...(await at('list.b')).tasks].map((t) => [t.task_id, t.state]));
    expect(listed).toEqual(
      new Map([
        [doneId, 'completed'],
        [runningId, 'running'],
      ]),
    );
    const completed = await m.listTasks(done.agentId!, { state: 'completed' });
    expect(completed.tasks.map((t) => t.task_id)).toEqual([doneId]);
    // A listing takes the session the mesh holds with the agent, or opens one: one per agent.
    expect(m.sessions).toBe(2);
    await expect(m.listTasks('list.nobody')).rejects.toMatchObject({ code: 'UNKNOWN_AGENT', unsent: true });
    await running.cancel('listed');
  });

  it('fails a submission with no candidate without sending anything (TAP-MESH-002)', async () => {
    const m = mesh(new MemoryRegistry());
    await expect(m.submit('nobody.offers', {})).rejects.toThrow(/no live agent in the registry offers nobody.offers/);
    expect(m.sessions).toBe(0);
  });
});
