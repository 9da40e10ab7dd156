import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { canonicalize } from '../core/jcs.ts';
import { createAgent } from './agent.ts';
import type { TaskContext } from './handler.ts';
import { JOURNAL_FILE } from './journal.ts';
import type { AgentOptions } from './options.ts';
import { withConformanceCapabilities } from './conformance-capabilities.ts';
import { agentCard, TestPeer, type Msg, expectCleanHistories } from './peer.testkit.ts';

afterEach(expectCleanHistories);

const dirs: string[] = [];
function stateDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'tap-journal-'));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A capability whose side effect never finishes: a crash always interrupts it. */
const stuck = {
  capability: {
    name: 'x.stuck',
    version: '1',
    description: 'an effect that hangs',
    input_formats: [],
    output_formats: [],
    streaming: false,
    side_effects: true,
  },
  handler: async (_input: unknown, ctx: TaskContext) => {
    await ctx.sideEffect(() => new Promise(() => {}));
  },
};

function durableAgent(dir: string, options: Partial<AgentOptions> = {}) {
  return createAgent({
    card: agentCard(),
    capabilities: { ...withConformanceCapabilities(), 'x.stuck': stuck },
    stateDir: dir,
    logger: () => {},
    ...options,
  });
}

/** A copy of the journal as it is now: the state a crash at this instant would leave. */
function crashImage(dir: string): string {
  const image = stateDir();
  copyFileSync(join(dir, JOURNAL_FILE), join(image, JOURNAL_FILE));
  return image;
}

async function resumeSession(
  peer: TestPeer,
  old: { sessionId: string; token: string },
  tasks: { task_id: string; last_sequence: number }[],
  versions = ['1.0'],
): Promise<Msg> {
  const init = peer.init({ versions, resume: { session_id: old.sessionId, resume_token: old.token, tasks } });
  const ack = await peer.reply(init.message_id);
  peer.sessionId = ack.payload.session_id;
  peer.version = ack.payload.version;
  const ready = peer.send({ type: 'handshake.ready', payload: { params: ack.payload.params } });
  await peer.reply(ready.message_id);
  return ack;
}

describe('journal and restart', () => {
  it('declares durability "restart" and keeps tap.test.counter across restarts (spec: tasks#durability)', async () => {
    const dir = stateDir();
    const first = durableAgent(dir);
    expect(first.card.durability).toBe('restart');
    const a = new TestPeer(first);
    await a.handshake();
    a.request('c1', 'tap.test.counter', { key: 'k' });
    expect((await a.result('c1')).payload.output).toEqual({ key: 'k', count: 1 });
    await first.shutdown();
    const second = durableAgent(dir);
    const b = new TestPeer(second);
    await b.handshake();
    b.request('c2', 'tap.test.counter', { key: 'k' });
    expect((await b.result('c2')).payload.output).toEqual({ key: 'k', count: 2 });
    await second.shutdown();
  });

  it('finds an interrupted task after a crash, resumes it from its checkpoint and replays its stream to a resuming requester (spec: tasks#durability)', async () => {
    const dir = stateDir();
    const first = durableAgent(dir);
    const a = new TestPeer(first);
    await a.handshake();
    a.request('s1', 'tap.test.sleep', { ms: 300 }, {}, { idempotency_key: 'S' });
    await a.waitFor((m) => m.task_id === 's1' && m.sequence === 2);
    const image = crashImage(dir);
    const seen = a.received.length;
    await first.shutdown();
    a.received.length = seen; // what the crashed agent never got to send

    const second = durableAgent(image);
    const b = new TestPeer(second);
    const ack = await resumeSession(b, { sessionId: a.sessionId!, token: a.resumeToken! }, [{ task_id: 's1', last_sequence: 1 }]);
    expect(ack.payload).toMatchObject({ resumed: true, session_id: a.sessionId });
    const running = await b.waitFor((m) => m.task_id === 's1' && m.sequence === 2);
    expect(running.message_id).toBe(a.stream('s1')[1].message_id);
    expect((await b.result('s1')).payload).toEqual({ status: 'completed', output: { slept_ms: 300 } });
    // The idempotency record survived too.
    const retry = b.request('s2', 'tap.test.sleep', { ms: 300 }, {}, { idempotency_key: 'S' });
    expect(await b.reply(retry.message_id)).toMatchObject({ type: 'task.snapshot', task_id: 's1' });
    await second.shutdown();
  });

  it("keeps a task's trace and 1.1 trace context across a restart: the resumed stream and the handler carry the same traceparent (spec: envelope#trace-context)", async () => {
    const dir = stateDir();
    const first = durableAgent(dir);
    const a = new TestPeer(first);
    await a.handshake({ versions: ['1.1', '1.0'] });
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const metadata = { trace_id: '0af7651916cd43dd8448eb211c80319c', traceparent, tracestate: 'k=v' };
    a.request('t1', 'tap.test.sleep', { ms: 300 }, {}, { metadata });
    await a.waitFor((m) => m.task_id === 't1' && m.sequence === 2);
    const image = crashImage(dir);
    const seen = a.received.length;
    await first.shutdown();
    a.received.length = seen;

    const second = durableAgent(image);
    const b = new TestPeer(second);
    await resumeSession(b, { sessionId: a.sessionId!, token: a.resumeToken! }, [{ task_id: 't1', last_sequence: 2 }], ['1.1', '1.0']);
    const result = await b.result('t1');
    expect(result.payload).toMatchObject({ status: 'completed' });
    expect(result.metadata).toMatchObject(metadata);
    // The compacted journal of the restarted agent still holds it.
    const records = readFileSync(join(image, JOURNAL_FILE), 'utf8')
      .split('\n')
      .filter((l) => l.includes('"t":"task"'))
      .map((l) => JSON.parse(l) as { carried?: unknown; trace?: unknown });
    expect(records.at(-1)).toMatchObject({ carried: { traceparent, tracestate: 'k=v' }, trace: { trace_id: metadata.trace_id } });
    await second.shutdown();
  });

  it('ends a task a crash interrupted mid-step failed, not retryable, indeterminate, and never re-runs the step (spec: tasks#durability)', async () => {
    const dir = stateDir();
    const first = durableAgent(dir);
    const a = new TestPeer(first);
    await a.handshake();
    a.request('x1', 'x.stuck', null);
    await a.waitFor((m) => m.task_id === 'x1' && m.sequence === 2);
    await new Promise((r) => setTimeout(r, 20));
    const image = crashImage(dir);
    const seen = a.received.length;
    await first.shutdown();
    a.received.length = seen; // what the crashed agent never got to send

    const second = durableAgent(image);
    const b = new TestPeer(second);
    await resumeSession(b, { sessionId: a.sessionId!, token: a.resumeToken! }, [{ task_id: 'x1', last_sequence: 2 }]);
    const result = await b.result('x1');
    expect(result.payload).toMatchObject({ status: 'failed', error: { retryable: false, details: { indeterminate: true } } });
    expect(result.sequence).toBe(3);
    await second.shutdown();
  });

  it("reads a journal that kept a large request's whole fingerprint: a repeat of the task after the restart is the same request (spec: idempotency#task-id-reuse)", async () => {
    const dir = stateDir();
    const input = { text: 'x'.repeat(1000) };
    const first = durableAgent(dir);
    const a = new TestPeer(first);
    await a.handshake();
    a.request('big1', 'tap.test.echo', input);
    await a.result('big1');
    const image = crashImage(dir);
    await first.shutdown();
    // The journal as an agent that kept fingerprints whole wrote it.
    const path = join(image, JOURNAL_FILE);
    const written = readFileSync(path, 'utf8');
    expect(written).toMatch(/"fingerprint":"sha256:/);
    const whole = JSON.stringify(canonicalize(['tap.test.echo', input]));
    writeFileSync(path, written.replace(/"fingerprint":"sha256:[^"]+"/, `"fingerprint":${whole}`));
    const second = durableAgent(image);
    const b = new TestPeer(second);
    await resumeSession(b, { sessionId: a.sessionId!, token: a.resumeToken! }, []);
    const again = b.request('big1', 'tap.test.echo', input);
    expect(await b.reply(again.message_id)).toMatchObject({ type: 'task.snapshot', task_id: 'big1', payload: { state: 'completed' } });
    const other = b.request('big1', 'tap.test.echo', { text: 'y'.repeat(1000) });
    expect((await b.reply(other.message_id)).payload.code).toBe('TASK_EXISTS');
    await second.shutdown();
  });

  it('ignores a torn last line and compacts the journal on start (spec: tasks#durability)', async () => {
    const dir = stateDir();
    const first = durableAgent(dir);
    const a = new TestPeer(first);
    await a.handshake();
    a.request('c1', 'tap.test.counter', { key: 'torn' });
    await a.result('c1');
    await first.shutdown();
    const path = join(dir, JOURNAL_FILE);
    writeFileSync(path, readFileSync(path, 'utf8') + '{"t":"kv","key":"tap.test.counter:torn","val');
    const second = durableAgent(dir);
    const lines = readFileSync(path, 'utf8').trim().split('\n');
    expect(lines.every((l) => JSON.parse(l))).toBeTruthy();
    const b = new TestPeer(second);
    await b.handshake();
    b.request('c2', 'tap.test.counter', { key: 'torn' });
    expect((await b.result('c2')).payload.output.count).toBe(2);
    await second.shutdown();
  });
});
