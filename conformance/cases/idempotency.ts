/** Duplicates and idempotency profile: repeated messages, keys, task ids, retryable endings (spec: idempotency). */
import { defineCase, type Case } from '../case.ts';
import type { Peer } from '../peer.ts';
import { collectUntilResult, describeMessage, grant, handshake, initPayload, request, startTask } from '../steps.ts';
import { check, checkError, need, require, runTask, show, verdictOf, wrongReply } from './kit.ts';

const P = 'idempotency' as const;
const COUNTER = { capabilities: ['tap.test.counter'] };

/** Reads the counter of `key` by running it once more; returns the count after that run. */
async function countAfter(peer: Peer, key: string): Promise<number> {
  const t = need(await runTask(peer, 'tap.test.counter', { key }));
  return Number(t.result.msg.payload.output?.count);
}

/** A counter key unique to this case run. */
function freshKey(peer: Peer): string {
  return `k-${peer.ids.task('key')}`;
}

export const idempotencyCases: Case[] = [
  defineCase({
    id: 'idempotency.duplicate.request',
    title: 'A task.request repeated with the same message_id gets the original reply byte for byte and runs once',
    profile: P,
    requirements: ['TAP-IDEM-001'],
    needs: COUNTER,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const key = freshKey(peer);
      const req = peer.envelope('task.request', { capability: 'tap.test.counter', input: { key } }, { task_id: peer.ids.task() });
      await peer.send(req);
      const first = need(await peer.reply(req));
      need(await collectUntilResult(peer, req.task_id!));
      const mark = peer.mark();
      await peer.send(req);
      await peer.send(req);
      await peer.barrier();
      const again = peer.since(mark).filter((r) => r.msg.reply_to === req.message_id);
      const n = await countAfter(peer, key);
      return verdictOf(
        'the original reply twice more; one execution',
        check(
          again.length === 2 && again.every((r) => r.text === first.text),
          'the repeats were not answered with the original reply, byte for byte',
          `two copies of ${first.msg.type}`,
          again.map((r) => describeMessage(r.msg)).join(', ') || 'nothing',
        ),
        check(n === 2, 'the counter shows the repeated message ran the work again', 'count 2 after one more distinct request', String(n)),
      );
    },
  }),
  defineCase({
    id: 'idempotency.duplicate.handshake',
    title: 'Repeated handshake messages and pings get their original replies byte for byte',
    profile: P,
    requirements: ['TAP-IDEM-001', 'TAP-IDEM-016'],
    run: async (ctx) => {
      const peer = need(await ctx.connect());
      const hs = need(await handshake(peer));
      const ping = await peer.post('ping', {});
      const pong = need(await peer.reply(ping));
      const mark = peer.mark();
      await peer.send(hs.init);
      await peer.send(hs.ready!);
      await peer.send(ping);
      await peer.barrier();
      const after = peer.since(mark);
      const replyTo = (id: string) => after.filter((r) => r.msg.reply_to === id);
      const problems: string[] = [];
      for (const [sent, original] of [
        [hs.init, hs.ack],
        [hs.ready!, hs.go!],
        [ping, pong],
      ] as const) {
        const rs = replyTo(sent.message_id);
        // The repeated init carries no session_id, and is still a duplicate (idempotency#repeated-init).
        const ok = rs.length === 1 && rs[0]!.text === original.text;
        if (!ok)
          problems.push(
            `the repeated ${sent.type} got ${rs.map((r) => describeMessage(r.msg)).join(', ') || 'nothing'}${rs.length === 1 ? ' (not the original bytes)' : ''}`,
          );
      }
      return verdictOf(
        'original replies re-sent',
        check(problems.length === 0, problems.join('; '), 'the original ack, go and pong', problems.join('; ')),
      );
    },
  }),
  defineCase({
    id: 'idempotency.duplicate.init-newer-minor',
    title: 'A repeat of an init written in a newer minor version gets the original ack, not UNSUPPORTED_VERSION',
    profile: P,
    requirements: ['TAP-IDEM-040', 'TAP-IDEM-016'],
    run: async (ctx) => {
      const peer = need(await ctx.connect());
      // A 1.1 requester writes tap/1.1 in its init and lists 1.0 too (spec: envelope#protocol).
      const init = peer.envelope('handshake.init', initPayload(peer, { versions: ['1.1', '1.0'] }), { protocol: 'tap/1.1' });
      await peer.send(init);
      const ack = need(await peer.reply(init));
      if (ack.msg.type !== 'handshake.ack') return wrongReply('an init in tap/1.1 listing 1.0', 'handshake.ack', ack.msg);
      const s = peer.state;
      s.version = ack.msg.payload.version;
      s.sessionId = ack.msg.payload.session_id;
      s.params = ack.msg.payload.params;
      s.agentId = ack.msg.payload.agent?.agent_id;
      s.bound = true;
      const mark = peer.mark();
      await peer.send(init);
      const again = need(await peer.waitFor((r) => r.index >= mark && r.msg.reply_to === init.message_id, 'a reply to the repeated init'));
      require(
        check(
          again.text === ack.text,
          `the repeat of the tap/1.1 init got ${describeMessage(again.msg)}, not the original handshake.ack`,
          'the original handshake.ack byte for byte',
          describeMessage(again.msg),
        ),
      );
      const ready = await peer.post('handshake.ready', { params: ack.msg.payload.params });
      const go = need(await peer.reply(ready));
      return verdictOf(
        'the original ack; the handshake goes on',
        check(go.msg.type === 'handshake.go', 'the handshake did not complete after the repeat', 'handshake.go', describeMessage(go.msg)),
      );
    },
  }),
  defineCase({
    id: 'idempotency.key.same-request',
    title: 'The same idempotency_key and request under a new task_id gets a snapshot of the original task, which runs once',
    profile: P,
    requirements: ['TAP-IDEM-005'],
    needs: COUNTER,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const key = freshKey(peer);
      const first = need(await runTask(peer, 'tap.test.counter', { key }, { idempotencyKey: key }));
      const { reply } = await request(peer, 'tap.test.counter', { key }, { idempotencyKey: key });
      const r = need(reply);
      if (r.msg.type !== 'task.snapshot')
        return wrongReply('a retry under the same idempotency_key', 'task.snapshot of the original task', r.msg);
      const n = await countAfter(peer, key);
      return verdictOf(
        'snapshot of the original; one execution',
        check(r.msg.task_id === first.taskId, "the snapshot's task_id is not the original task's", first.taskId, String(r.msg.task_id)),
        check(
          r.msg.payload.result?.output?.count === 1,
          'the snapshot does not carry the original result',
          'result output count 1',
          show(r.msg.payload.result),
        ),
        check(n === 2, 'the counter shows the work ran again', 'count 2 after one more distinct request', String(n)),
      );
    },
  }),
  defineCase({
    id: 'idempotency.key.canonical',
    title: 'Requests equal in RFC 8785 canonical form (member order, number spelling) are the same request',
    profile: P,
    requirements: ['TAP-IDEM-005'],
    needs: COUNTER,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const key = freshKey(peer);
      const a = need(await runTask(peer, 'tap.test.counter', { key, extra: { b: 1.0, a: [1e2, 'x'] } }, { idempotencyKey: key }));
      const m = peer.envelope(
        'task.request',
        { capability: 'tap.test.counter', input: '__X__' },
        { task_id: peer.ids.task(), idempotency_key: key },
      );
      const text = JSON.stringify(m).replace('"__X__"', `{"extra":{"a":[100,"x"],"b":1},"key":${JSON.stringify(key)}}`);
      await peer.sendText(text, 'the same input with reordered members and respelled numbers');
      const r = need(await peer.reply(m));
      return verdictOf(
        'the same request',
        check(
          r.msg.type === 'task.snapshot' && r.msg.task_id === a.taskId,
          'a canonically equal request under the same key was not recognised as a repeat',
          `task.snapshot of ${a.taskId}`,
          describeMessage(r.msg),
        ),
      );
    },
  }),
  defineCase({
    id: 'idempotency.key.conflict',
    title: 'The same idempotency_key with a different request gets IDEMPOTENCY_CONFLICT',
    profile: P,
    requirements: ['TAP-IDEM-006'],
    needs: COUNTER,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const key = freshKey(peer);
      need(await runTask(peer, 'tap.test.counter', { key }, { idempotencyKey: key }));
      const taskId = peer.ids.task();
      const { sent, reply } = await request(peer, 'tap.test.counter', { key: `${key}-other` }, { idempotencyKey: key, taskId });
      return verdictOf(
        'conflict',
        checkError(
          need(reply).msg,
          { code: 'IDEMPOTENCY_CONFLICT', replyTo: sent.message_id, taskId },
          'a different input under a used key',
        ),
      );
    },
  }),
  defineCase({
    id: 'idempotency.key.authorization-rechecked',
    title: 'A repeated request is authorized again before its snapshot is returned',
    profile: P,
    requirements: ['TAP-IDEM-007'],
    needs: { capabilities: ['tap.test.guarded'] },
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const key = freshKey(peer);
      need(await runTask(peer, 'tap.test.guarded', {}, { idempotencyKey: key, authorization: grant(['tap.test.write']) }));
      const expired = { permissions: ['tap.test.write'], resources: [], expires_at: new Date(Date.now() - 60_000).toISOString() };
      const a = await request(peer, 'tap.test.guarded', {}, { idempotencyKey: key, authorization: expired });
      require(checkError(need(a.reply).msg, { code: 'AUTHORIZATION_EXPIRED' }, 'a repeat whose grant has expired'));
      const b = await request(peer, 'tap.test.guarded', {}, { idempotencyKey: key });
      return verdictOf('re-authorized', checkError(need(b.reply).msg, { code: 'PERMISSION_DENIED' }, 'a repeat without the permission'));
    },
  }),
  defineCase({
    id: 'idempotency.task-id.same-request',
    title: 'Reusing a task_id for the same request gets a snapshot of that task and runs nothing again',
    profile: P,
    requirements: ['TAP-IDEM-008'],
    needs: COUNTER,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const key = freshKey(peer);
      const first = need(await runTask(peer, 'tap.test.counter', { key }));
      const { reply } = await request(peer, 'tap.test.counter', { key }, { taskId: first.taskId });
      const r = need(reply);
      if (r.msg.type !== 'task.snapshot') return wrongReply('the same request under the same task_id', 'task.snapshot', r.msg);
      const n = await countAfter(peer, key);
      return verdictOf('snapshot; one execution', check(n === 2, 'the counter shows the work ran again', 'count 2', String(n)));
    },
  }),
  defineCase({
    id: 'idempotency.task-id.different-request',
    title: 'Reusing a task_id for a different request gets TASK_EXISTS',
    profile: P,
    requirements: ['TAP-IDEM-009'],
    needs: { capabilities: ['tap.test.counter', 'tap.test.echo'] },
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const first = need(await runTask(peer, 'tap.test.counter', { key: freshKey(peer) }));
      const a = await request(peer, 'tap.test.counter', { key: 'another' }, { taskId: first.taskId });
      require(checkError(need(a.reply).msg, { code: 'TASK_EXISTS', taskId: first.taskId }, 'the same task_id with another input'));
      const b = await request(peer, 'tap.test.echo', 1, { taskId: first.taskId });
      return verdictOf(
        'TASK_EXISTS',
        checkError(need(b.reply).msg, { code: 'TASK_EXISTS', taskId: first.taskId }, 'the same task_id with another capability'),
      );
    },
  }),
  defineCase({
    id: 'idempotency.retryable.releases-key',
    title: 'A task ended with a retryable error releases its key: a retry under a new task_id names it in previous_task_id',
    profile: P,
    requirements: ['TAP-IDEM-010', 'TAP-IDEM-011'],
    needs: { capabilities: ['tap.test.fail'] },
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const key = freshKey(peer);
      const input = { code: 'INTERNAL_ERROR', message: 'transient' };
      const first = need(await runTask(peer, 'tap.test.fail', input, { idempotencyKey: key }));
      require(
        check(
          first.result.msg.payload.error?.retryable === true,
          'the first task did not end retryable',
          'retryable: true',
          show(first.result.msg.payload.error),
        ),
      );
      const retry = need(await startTask(peer, 'tap.test.fail', input, { idempotencyKey: key }));
      need(await collectUntilResult(peer, retry.taskId));
      const old = await request(peer, 'tap.test.fail', input, { taskId: first.taskId, idempotencyKey: key });
      const o = need(old.reply);
      return verdictOf(
        `retry ${retry.taskId} names ${first.taskId}`,
        check(
          retry.accepted.msg.payload.previous_task_id === first.taskId,
          "the retry's task.accepted does not name the released task in previous_task_id",
          first.taskId,
          show(retry.accepted.msg.payload.previous_task_id),
        ),
        check(
          o.msg.type === 'task.snapshot' && o.msg.task_id === first.taskId,
          "reusing the old task_id did not get the old task's snapshot",
          `task.snapshot of ${first.taskId}`,
          describeMessage(o.msg),
        ),
      );
    },
  }),
  defineCase({
    id: 'idempotency.non-retryable.keeps-key',
    title: 'A task ended with a non-retryable error keeps its key: a retry gets its snapshot',
    profile: P,
    spec: 'idempotency#retryable-endings',
    reason: 'a non-retryable ending is the subject of Retryable endings; the rule it checks is how long records are kept (TAP-IDEM-015)',
    requirements: ['TAP-IDEM-015', 'TAP-IDEM-010'],
    needs: { capabilities: ['tap.test.fail'] },
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const key = freshKey(peer);
      const input = { code: 'INTERNAL_ERROR', retryable: false };
      const first = need(await runTask(peer, 'tap.test.fail', input, { idempotencyKey: key }));
      const { reply } = await request(peer, 'tap.test.fail', input, { idempotencyKey: key });
      const r = need(reply);
      return verdictOf(
        'snapshot of the failed task',
        check(
          r.msg.type === 'task.snapshot' && r.msg.task_id === first.taskId,
          'a retry after a non-retryable ending did not get the original task',
          `task.snapshot of ${first.taskId}`,
          describeMessage(r.msg),
        ),
      );
    },
  }),
  defineCase({
    id: 'idempotency.exactly-once.burst',
    title: 'A burst of duplicates and keyed retries still runs the side effect exactly once',
    profile: P,
    spec: 'idempotency#idempotency-keys',
    reason:
      'the burst mixes keyed retries with duplicates, and keyed retries are the section it proves (Idempotency keys); duplicates come first among its requirements',
    requirements: ['TAP-IDEM-001', 'TAP-IDEM-005'],
    needs: COUNTER,
    // One keyed request sent four times and four retries under its key: five task ids at once.
    tasks: 5,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const key = freshKey(peer);
      const req = peer.envelope(
        'task.request',
        { capability: 'tap.test.counter', input: { key } },
        { task_id: peer.ids.task(), idempotency_key: key },
      );
      const sends: Promise<unknown>[] = [];
      for (let i = 0; i < 4; i++) sends.push(peer.send(req));
      for (let i = 0; i < 4; i++)
        sends.push(
          peer.post('task.request', { capability: 'tap.test.counter', input: { key } }, { task_id: peer.ids.task(), idempotency_key: key }),
        );
      await Promise.all(sends);
      need(await collectUntilResult(peer, req.task_id!));
      await peer.barrier(300);
      const n = await countAfter(peer, key);
      return verdictOf(
        'one execution',
        check(n === 2, `the counter ran ${n - 1} times for one keyed request`, 'once (count 2 after one more request)', String(n)),
      );
    },
  }),
  defineCase({
    id: 'idempotency.duplicate-table',
    title: 'The agent remembers at least the 1 024 most recent message ids of a session',
    profile: P,
    requirements: ['TAP-IDEM-004'],
    needs: COUNTER,
    budgetMs: 40_000,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const key = freshKey(peer);
      const req = peer.envelope('task.request', { capability: 'tap.test.counter', input: { key } }, { task_id: peer.ids.task() });
      await peer.send(req);
      const first = need(await peer.reply(req));
      need(await collectUntilResult(peer, req.task_id!));
      const pings = [];
      for (let i = 0; i < 1020; i++) pings.push(await peer.post('ping', {}));
      need(await peer.reply(pings[pings.length - 1]!, ctx.scaled(20_000)));
      const mark = peer.mark();
      await peer.send(req);
      const again = need(
        await peer.waitFor((m) => m.index >= mark && m.msg.reply_to === req.message_id, 'the original reply after 1 020 other messages'),
      );
      return verdictOf(
        'still remembered',
        check(again.text === first.text, 'the repeat was not answered with the original reply', first.msg.type, describeMessage(again.msg)),
      );
    },
  }),
];
