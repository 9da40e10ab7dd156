/**
 * The client against the reference agent runtime, over the in-memory pair and over WebSocket.
 */
import { describe, expect, it } from 'vitest';
import type { Agent } from '../agent/index.ts';
import { checkHistory } from '../core/history.ts';
import { createWebSocketServer, type TapWebSocketServer, type WebSocketTransport } from '../transports/index.ts';
import { connectWs, type ConnectOptions, type StreamMessage, type TapClient, type WireEntry } from './index.ts';
import { inMemory, REFERENCE_CARD } from './reference-agent.testkit.ts';

const card = REFERENCE_CARD;

const { cleanups, agentWith, overMemory } = inMemory();

const inbound = (wire: WireEntry[]) => wire.filter((e) => e.dir === 'in').map((e) => JSON.parse(e.text) as Record<string, unknown>);
const outbound = (wire: WireEntry[]) => wire.filter((e) => e.dir === 'out').map((e) => JSON.parse(e.text) as Record<string, unknown>);
/** A stream as comparable values: everything but ids and times. */
const shape = (log: readonly StreamMessage[]) =>
  log.map((m) => {
    const { deadline: _deadline, ...payload } = m.payload as Record<string, unknown>;
    return { type: m.type, sequence: m.sequence, payload };
  });

describe('client ↔ reference agent over the memory pair', () => {
  it('round-trips tap.test.echo', async () => {
    const { client, wire } = await overMemory(agentWith(), { requires: ['tap.test.echo'] });
    expect(client.handshake.granted).toEqual(['tap.test.echo']);
    const h = client.submit('tap.test.echo', { text: 'hello', n: [1, 2, 3] });
    expect(await h.result).toEqual({ status: 'completed', output: { text: 'hello', n: [1, 2, 3] } });
    expect(checkHistory(inbound(wire), undefined, { complete: true })).toEqual([]);
  });

  it('delivers the events of tap.test.stream in sequence order, then the result', async () => {
    const { client, wire } = await overMemory(agentWith());
    const h = client.submit('tap.test.stream', { count: 5, interval_ms: 5 });
    const outputs: unknown[] = [];
    for await (const e of h.events) if (e.payload.kind === 'output') outputs.push(e.payload.data);
    expect(outputs).toEqual([0, 1, 2, 3, 4].map((index) => ({ index })));
    expect(await h.result).toEqual({ status: 'completed', output: { count: 5 } });
    const seqs = h.log.map((m) => m.sequence);
    expect(seqs).toEqual(seqs.map((_, i) => i + 1));
    expect(checkHistory(inbound(wire), undefined, { complete: true })).toEqual([]);
  });

  it('cancels tap.test.sleep: snapshot first, then the cancelled result (spec: tasks#cancellation)', async () => {
    const { client } = await overMemory(agentWith());
    const h = client.submit('tap.test.sleep', { ms: 30_000 });
    await h.accepted;
    const snap = await h.cancel('changed my mind');
    expect(['accepted', 'running', 'cancelling']).toContain(snap.state);
    const r = await h.result;
    expect(r.status).toBe('cancelled');
    expect(h.state).toBe('cancelled');
  });

  it('approves a plan through onPlan before any step runs (spec: plans#approval)', async () => {
    const { client } = await overMemory(agentWith());
    const plan = {
      intent: 'touch two files',
      steps: [
        { action: 'create', target: 'a.txt', expected_output: 'a.txt exists', reversible: true },
        { action: 'create', target: 'b.txt', expected_output: 'b.txt exists', reversible: true },
      ],
      rollback: 'delete both',
      estimated_cost: { seconds: 1 },
      risk_level: 'low',
    };
    const decided: string[] = [];
    const h = client.submit(
      'tap.test.plan',
      { plan },
      {
        onPlan: (p) => {
          decided.push(p.plan.plan_id);
          return 'approved';
        },
      },
    );
    expect(await h.result).toEqual({ status: 'completed', output: { executed: ['create', 'create'] } });
    expect(decided).toHaveLength(1);
    const kinds = h.log.map((m) => (m.type === 'task.event' ? `${m.payload.kind}` : m.type));
    expect(kinds.indexOf('plan.submit')).toBeLessThan(kinds.indexOf('output'));
    expect(h.plan?.plan_id).toBe(decided[0]);
  });

  it('retries a BUSY refusal with the same idempotency_key and a new task_id (spec: tasks#retries)', async () => {
    const agent = agentWith({ card: { ...card, limits: { ...card.limits, max_concurrent_tasks: 1 } } });
    const { client, wire } = await overMemory(agent, { retry: { attempts: 10, baseMs: 50, maxMs: 200 } });
    const blocker = client.submit('tap.test.sleep', { ms: 150 });
    await blocker.accepted;
    const h = client.submit('tap.test.echo', 'after the blocker');
    expect(await h.result).toEqual({ status: 'completed', output: 'after the blocker' });
    const requests = outbound(wire).filter(
      (m) => m.type === 'task.request' && (m.payload as { capability: string }).capability === 'tap.test.echo',
    );
    expect(requests.length).toBeGreaterThan(1);
    expect(new Set(requests.map((m) => m.idempotency_key)).size).toBe(1);
    expect(new Set(requests.map((m) => m.task_id)).size).toBe(requests.length);
    const busy = inbound(wire).filter((m) => m.type === 'error' && (m.payload as { code: string }).code === 'BUSY');
    expect(busy.length).toBe(requests.length - 1);
    await blocker.result;
  });

  it('a repeated idempotency_key from the same principal is answered with the original task, run once (spec: tasks#idempotency)', async () => {
    const agent = agentWith({ authenticate: (c) => (c.token === 'alice-token' ? 'alice' : null) });
    const credentials = { scheme: 'bearer', token: 'alice-token' };
    const first = await overMemory(agent, { credentials });
    const h1 = first.client.submit('tap.test.counter', { key: 'orders' }, { idempotencyKey: 'order-7' });
    expect(await h1.result).toEqual({ status: 'completed', output: { key: 'orders', count: 1 } });
    // A second session of the same principal (a requester that restarted) retries under the same key.
    const second = await overMemory(agent, { credentials });
    const h2 = second.client.submit('tap.test.counter', { key: 'orders' }, { idempotencyKey: 'order-7' });
    const accepted = await h2.accepted;
    expect(accepted.snapshot?.state).toBe('completed');
    expect(accepted.taskId).toBe(h1.taskId);
    expect(await h2.result).toEqual({ status: 'completed', output: { key: 'orders', count: 1 } });
    // The stream stays with the first session (spec: resume#attachment): the second sees none of it.
    expect(h2.log).toEqual([]);
    expect(inbound(second.wire).filter((m) => m.task_id === h1.taskId && m.sequence !== undefined)).toEqual([]);
    // The counter really ran once.
    const h3 = second.client.submit('tap.test.counter', { key: 'orders' });
    expect(await h3.result).toEqual({ status: 'completed', output: { key: 'orders', count: 2 } });
  });

  it('a repeat of a task still running in another session is followed by task.status to its result (spec: resume#attachment)', async () => {
    const agent = agentWith({ authenticate: (c) => (c.token === 'alice-token' ? 'alice' : null) });
    const credentials = { scheme: 'bearer', token: 'alice-token' };
    const first = await overMemory(agent, { credentials });
    const h1 = first.client.submit('tap.test.sleep', { ms: 400 }, { idempotencyKey: 'nightly' });
    await h1.accepted;
    const second = await overMemory(agent, { credentials });
    const h2 = second.client.submit('tap.test.sleep', { ms: 400 }, { idempotencyKey: 'nightly' });
    expect((await h2.accepted).taskId).toBe(h1.taskId);
    const [r1, r2] = await Promise.all([h1.result, h2.result]);
    expect(r2).toEqual(r1);
    expect(r2.status).toBe('completed');
    const sent = outbound(second.wire).map((m) => m.type);
    expect(sent).toContain('task.resume');
    expect(sent).toContain('task.status');
    const refused = inbound(second.wire).find((m) => m.type === 'error' && (m.payload as { code: string }).code === 'PROTOCOL_VIOLATION');
    expect(refused?.task_id).toBe(h1.taskId);
  });

  it('shutdownAgent: the running task is handed off and ends cancelled with SHUTTING_DOWN (spec: shutdown#handoff)', async () => {
    const { client, wire } = await overMemory(agentWith());
    const h = client.submit('tap.test.sleep', { ms: 30_000 });
    await h.accepted;
    const out = await client.shutdownAgent({ reason: 'maintenance window', graceMs: 2000 });
    expect(out.approved).toBe(true);
    expect(out.handoffs.map((x) => x.taskId)).toEqual([h.taskId]);
    expect(out.farewell).toBeTypeOf('string');
    const r = await h.result;
    expect(r.status).toBe('cancelled');
    expect(r.error?.code).toBe('SHUTTING_DOWN');
    expect(h.handoff?.resume_hint).toBeTypeOf('string');
    const types = inbound(wire).map((m) => m.type);
    expect(types.indexOf('shutdown.response')).toBeLessThan(types.indexOf('task.handoff'));
    expect(types.indexOf('task.result')).toBeLessThan(types.lastIndexOf('session.farewell'));
    expect(client.isOpen).toBe(false);
  });
});

describe('client ↔ reference agent over WebSocket', () => {
  async function serve(agent: Agent) {
    const sockets: WebSocketTransport[] = [];
    const server: TapWebSocketServer = await createWebSocketServer({
      host: '127.0.0.1',
      port: 0,
      onSession: (t) => {
        sockets.push(t);
        agent.attach(t);
      },
    });
    cleanups.push(() => server.close());
    return { server, sockets };
  }

  async function wsClient(url: string, options: Partial<ConnectOptions> = {}): Promise<TapClient> {
    const client = await connectWs(url, { agentId: 'test-requester', reconnect: { baseMs: 20, maxMs: 200 }, ...options });
    cleanups.push(() => client.close());
    return client;
  }

  it('round-trips tap.test.echo over ws://127.0.0.1', async () => {
    const { server } = await serve(agentWith());
    const client = await wsClient(server.url);
    expect(await client.submit('tap.test.echo', [1, 'two']).result).toEqual({ status: 'completed', output: [1, 'two'] });
  });

  it('survives the server-side socket dropping mid-stream: reconnect + resume, no loss, no duplicate (spec: sessions#resume)', async () => {
    const input = { count: 30, interval_ms: 15 };
    // The uninterrupted run, for comparison.
    const reference = await serve(agentWith());
    const steady = await wsClient(reference.server.url);
    const h0 = steady.submit('tap.test.stream', input);
    await h0.result;

    const { server, sockets } = await serve(agentWith());
    const wire: WireEntry[] = [];
    const client = await wsClient(server.url, { trace: (e) => wire.push(e) });
    const events: unknown[] = [];
    const lost = new Promise((r) => client.on('lost', r));
    const reconnected = new Promise<{ resumed: boolean }>((r) => client.on('reconnected', r));
    const h = client.submit('tap.test.stream', input);
    let dropped = false;
    for await (const e of h.events) {
      events.push(e.payload);
      if (!dropped && events.length === 6) {
        dropped = true;
        sockets[0]!.terminate();
      }
    }
    await lost;
    expect((await reconnected).resumed).toBe(true);
    expect(await h.result).toEqual({ status: 'completed', output: { count: 30 } });
    expect(sockets).toHaveLength(2);
    expect(shape(h.log)).toEqual(shape(h0.log));
    expect(events).toEqual(h0.log.filter((m) => m.type === 'task.event').map((m) => m.payload));
    const init = inbound(wire).length && outbound(wire).filter((m) => m.type === 'handshake.init');
    expect((init as Record<string, unknown>[])[1]!.payload).toMatchObject({
      resume: { session_id: client.handshake.sessionId, tasks: [{ task_id: h.taskId }] },
    });
    // Across both connections, the agent's stream obeys the rules (replays are skipped).
    expect(checkHistory(inbound(wire), undefined, { complete: true })).toEqual([]);
  });
});
