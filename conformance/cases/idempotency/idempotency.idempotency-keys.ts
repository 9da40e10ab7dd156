/** idempotency profile, Idempotency keys (spec: idempotency#idempotency-keys). */
import { type Case, defineCase } from '../../case.ts';
import { countAfter, COUNTER, freshKey } from './kit.ts';
import { check, checkError, need, require, runTask, show, verdictOf, wrongReply } from '../kit.ts';
import { collectUntilResult, describeMessage, grant, request } from '../../steps.ts';

export const cases: Case[] = [
  defineCase({
    id: 'idempotency.key.same-request',
    title: 'The same idempotency_key and request under a new task_id gets a snapshot of the original task, which runs once',
    profile: 'idempotency',
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
    profile: 'idempotency',
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
    profile: 'idempotency',
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
    profile: 'idempotency',
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
    id: 'idempotency.exactly-once.burst',
    title: 'A burst of duplicates and keyed retries still runs the side effect exactly once',
    profile: 'idempotency',
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
];
