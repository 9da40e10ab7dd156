/**
 * Model test: random sequences of requester actions against the reference agent over a memory
 * pair (submit echo/sleep/counter, with or without an idempotency key; byte-identical duplicates;
 * cancel; status; task.resume; disconnect and resume of the session), then checks that the
 * history rules hold, that every accepted task ended with exactly one task.result, that every
 * request got exactly one direct reply, and that the counter ran once per distinct request.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkHistory } from '../core/history.ts';
import { testAgent, TestPeer, type Msg } from './peer.testkit.ts';

type Action =
  | { kind: 'submit'; cap: 'echo' | 'sleep' | 'counter'; ms: number; key: string; idem?: string }
  | { kind: 'duplicate'; pick: number }
  | { kind: 'cancel'; pick: number }
  | { kind: 'status'; pick: number }
  | { kind: 'resume'; pick: number; last: number }
  | { kind: 'reconnect' };

const action: fc.Arbitrary<Action> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('submit' as const),
      cap: fc.constantFrom('echo' as const, 'sleep' as const, 'counter' as const),
      ms: fc.integer({ min: 0, max: 30 }),
      key: fc.constantFrom('a', 'b', 'c'),
      idem: fc.option(fc.constantFrom('K1', 'K2', 'K3'), { nil: undefined }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('duplicate' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('cancel' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('status' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('resume' as const), pick: fc.nat(), last: fc.integer({ min: 0, max: 4 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('reconnect' as const) }) },
);

async function run(actions: Action[]): Promise<void> {
  const agent = testAgent();
  const peers: TestPeer[] = [new TestPeer(agent)];
  let peer = peers[0]!;
  await peer.handshake();
  const sent: Msg[] = []; // every request sent, in order (duplicates included once)
  const taskIds: string[] = [];
  let n = 0;
  const all = (): Msg[] => peers.flatMap((p) => p.received);
  for (const a of actions) {
    const pickTask = (i: number) => taskIds[i % taskIds.length];
    switch (a.kind) {
      case 'submit': {
        const id = `t${++n}`;
        taskIds.push(id);
        const input = a.cap === 'echo' ? { n } : a.cap === 'sleep' ? { ms: a.ms } : { key: a.key };
        sent.push(peer.request(id, `tap.test.${a.cap}`, input, {}, a.idem ? { idempotency_key: a.idem } : {}));
        break;
      }
      case 'duplicate':
        if (sent.length > 0) peer.sendText(JSON.stringify(sent[a.pick % sent.length]));
        break;
      case 'cancel':
        if (taskIds.length > 0) sent.push(peer.send({ type: 'task.cancel', task_id: pickTask(a.pick), payload: {} }));
        break;
      case 'status':
        if (taskIds.length > 0) sent.push(peer.send({ type: 'task.status', task_id: pickTask(a.pick), payload: {} }));
        break;
      case 'resume':
        if (taskIds.length > 0)
          sent.push(peer.send({ type: 'task.resume', task_id: pickTask(a.pick), payload: { last_sequence: a.last } }));
        break;
      case 'reconnect': {
        // Wait for the replies so far, then drop the transport and resume the session with no task list.
        await peer.until(() => sent.every((m) => all().some((r) => r.reply_to === m.message_id)));
        const old = peer;
        await old.close();
        peer = new TestPeer(agent);
        peers.push(peer);
        const init = peer.init({ resume: { session_id: old.sessionId!, resume_token: old.resumeToken!, tasks: [] } });
        const ack = await peer.reply(init.message_id);
        expect(ack.payload.resumed).toBe(true);
        peer.sessionId = ack.payload.session_id;
        peer.resumeToken = ack.payload.resume_token;
        const ready = peer.send({ type: 'handshake.ready', payload: { params: ack.payload.params } });
        expect((await peer.reply(ready.message_id)).type).toBe('handshake.go');
        break;
      }
    }
  }
  // Every request answered.
  await peer.until(() => sent.every((m) => all().some((r) => r.reply_to === m.message_id)));
  const accepted = new Set(
    all()
      .filter((m) => m.type === 'task.accepted')
      .map((m) => m.task_id as string),
  );
  // Results of tasks that ran while a connection was down are fetched with task.resume.
  for (const id of accepted) {
    if (!all().some((m) => m.type === 'task.result' && m.task_id === id)) {
      await new Promise((r) => setTimeout(r, 50));
      if (!all().some((m) => m.type === 'task.result' && m.task_id === id)) {
        const seen = Math.max(
          0,
          ...all()
            .filter((m) => m.task_id === id && typeof m.sequence === 'number')
            .map((m) => m.sequence as number),
        );
        const r = peer.send({ type: 'task.resume', task_id: id, payload: { last_sequence: seen } });
        sent.push(r);
      }
    }
    await peer.until(() => all().some((m) => m.type === 'task.result' && m.task_id === id));
  }
  await peer.until(() => sent.every((m) => all().some((r) => r.reply_to === m.message_id)));
  await new Promise((r) => setTimeout(r, 30));
  const msgs = all();

  // No illegal transition, sequence gap or second result; one direct reply per request.
  expect(checkHistory(msgs)).toEqual([]);
  // Exactly one direct reply per distinct request (a duplicate's re-sent reply is the same bytes).
  const raws = peers.flatMap((p) => p.raw);
  for (const m of sent) {
    const replies = new Set(raws.filter((t) => JSON.parse(t).reply_to === m.message_id));
    expect(replies.size, `replies to ${m.type} ${m.message_id}`).toBe(1);
  }
  // No lost task: each accepted task has exactly one distinct result.
  for (const id of accepted) {
    const results = new Set(
      raws.filter((t) => {
        const m = JSON.parse(t);
        return m.type === 'task.result' && m.task_id === id;
      }),
    );
    expect(results.size, `results of ${id}`).toBe(1);
  }
  // The counter ran once per accepted counter task: per key, the counts are 1..k without repeats.
  const counts = new Map<string, number[]>();
  for (const id of accepted) {
    const res = msgs.find((m) => m.type === 'task.result' && m.task_id === id)!;
    if (res.payload.status === 'completed' && res.payload.output && typeof res.payload.output.count === 'number') {
      const key = res.payload.output.key as string;
      counts.set(key, [...(counts.get(key) ?? []), res.payload.output.count]);
    }
  }
  for (const [key, values] of counts) {
    const sorted = [...values].sort((x, y) => x - y);
    expect(new Set(sorted).size, `counter ${key} counts ${sorted}`).toBe(sorted.length);
  }
  // Tasks accepted under an idempotency key: one task per (capability, key) among accepted ones.
  const idemTasks = new Map<string, Set<string>>();
  for (const m of sent) {
    if (m.type !== 'task.request' || !m.idempotency_key || !accepted.has(m.task_id)) continue;
    const k = `${m.payload.capability} ${m.idempotency_key}`;
    idemTasks.set(k, new Set([...(idemTasks.get(k) ?? []), m.task_id]));
  }
  for (const [k, ids] of idemTasks) expect(ids.size, `tasks under idempotency key ${k}`).toBe(1);
}

describe('model: random requester behaviour', () => {
  it('keeps the history rules, loses no task, answers each request once and runs the counter once per request (spec: idempotency#idempotency-keys, resume#task-resume)', async () => {
    await fc.assert(fc.asyncProperty(fc.array(action, { minLength: 1, maxLength: 12 }), run), { numRuns: 25 });
  }, 40_000);
});
