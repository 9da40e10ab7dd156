/** Authorization and session isolation profile: grants, permission checks, principals (spec: authorization). */
import { defineCase, type Case } from '../case.ts';
import type { Peer, Received } from '../peer.ts';
import { collectUntilResult, describeMessage, grant, request, startTask, waitStream } from '../steps.ts';
import { check, checkError, need, require, runTask, show, verdictOf } from './kit.ts';
import { PLAN } from './plans.ts';

const P = 'authorization' as const;
const GUARDED = { capabilities: ['tap.test.guarded'] };
const TWO_SESSIONS = { binding: 'websocket' as const };

function expiredGrant(permissions: string[]): Record<string, unknown> {
  return { permissions, resources: [], expires_at: new Date(Date.now() - 60_000).toISOString() };
}

/** The error a request naming `taskId` gets, with the task id masked so two answers compare. */
function masked(m: Received['msg'], taskId: string): string {
  const p = m.payload ?? {};
  return JSON.stringify({ type: m.type, code: p.code, message: p.message, details: p.details, retryable: p.retryable })
    .split(taskId)
    .join('<id>');
}

async function statusOf(peer: Peer, taskId: string): Promise<Received> {
  const sent = await peer.post('task.status', {}, { task_id: taskId });
  return need(await peer.reply(sent));
}

export const authorizationCases: Case[] = [
  defineCase({
    id: 'authorization.permission.missing-grant',
    title: 'A task.request without authorization for a capability requiring a permission gets PERMISSION_DENIED naming it',
    profile: P,
    requirements: ['TAP-AUTH-008'],
    needs: GUARDED,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const { sent, reply } = await request(peer, 'tap.test.guarded', {});
      const m = need(reply).msg;
      require(
        checkError(
          m,
          { code: 'PERMISSION_DENIED', replyTo: sent.message_id, taskId: sent.task_id },
          'tap.test.guarded without authorization',
        ),
      );
      return verdictOf(
        'refused',
        check(
          m.payload.details?.required_permission === 'tap.test.write',
          'details.required_permission does not name the permission',
          'tap.test.write',
          show(m.payload.details),
        ),
      );
    },
  }),
  defineCase({
    id: 'authorization.permission.lacking',
    title: 'A grant lacking the required permission gets PERMISSION_DENIED, not retryable',
    profile: P,
    requirements: ['TAP-AUTH-008'],
    needs: GUARDED,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const { reply } = await request(peer, 'tap.test.guarded', {}, { authorization: grant(['tap.test.read', 'other.perm']) });
      const m = need(reply).msg;
      require(checkError(m, { code: 'PERMISSION_DENIED' }, 'a grant without tap.test.write'));
      return verdictOf(
        'refused',
        check(
          m.payload.details?.required_permission === 'tap.test.write',
          'details.required_permission does not name the permission',
          'tap.test.write',
          show(m.payload.details),
        ),
      );
    },
  }),
  defineCase({
    id: 'authorization.permission.granted',
    title: 'A grant with the required permission lets the task run',
    profile: P,
    requirements: ['TAP-AUTH-008'],
    needs: GUARDED,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await runTask(peer, 'tap.test.guarded', {}, { authorization: grant(['tap.test.write']) }));
      return verdictOf(
        'ran',
        check(
          t.result.msg.payload.status === 'completed' && t.result.msg.payload.output?.ok === true,
          'tap.test.guarded with the permission did not complete with { ok: true }',
          '{ ok: true }',
          describeMessage(t.result.msg),
        ),
      );
    },
  }),
  defineCase({
    id: 'authorization.expired.first',
    title: 'An expired grant gets AUTHORIZATION_EXPIRED before any other authorization check, whatever the capability',
    profile: P,
    requirements: ['TAP-AUTH-007'],
    needs: { capabilities: ['tap.test.guarded', 'tap.test.echo'] },
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const a = await request(peer, 'tap.test.guarded', {}, { authorization: expiredGrant(['other.perm']) });
      require(checkError(need(a.reply).msg, { code: 'AUTHORIZATION_EXPIRED' }, 'an expired grant that also lacks the permission'));
      const b = await request(peer, 'tap.test.echo', 1, { authorization: expiredGrant([]) });
      return verdictOf(
        'AUTHORIZATION_EXPIRED both times',
        checkError(need(b.reply).msg, { code: 'AUTHORIZATION_EXPIRED' }, 'an expired grant on a capability needing no permission'),
      );
    },
  }),
  defineCase({
    id: 'authorization.expired.before-step',
    title: 'A side-effecting step is not started after the grant expired; the task ends failed AUTHORIZATION_EXPIRED',
    profile: P,
    requirements: ['TAP-AUTH-006'],
    needs: { capabilities: ['tap.test.plan'] },
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await startTask(peer, 'tap.test.plan', { plan: PLAN }, { authorization: grant([], 700) }));
      const submit = need(await waitStream(peer, t.taskId, (m) => m.type === 'plan.submit', 'plan.submit'));
      await ctx.sleep(1200);
      const d = await peer.post(
        'plan.decision',
        { plan_id: submit.msg.payload.plan?.plan_id, decision: 'approved', feedback: 'late' },
        { task_id: t.taskId },
      );
      need(await peer.reply(d));
      const r = need(await collectUntilResult(peer, t.taskId));
      const steps = r.stream.filter((m) => m.msg.payload?.kind === 'output').length;
      return verdictOf(
        'no step after the grant expired',
        check(steps === 0, `${steps} steps ran after the task's grant had expired`, 'no step', `${steps} steps`),
        check(
          r.result.msg.payload.error?.code === 'AUTHORIZATION_EXPIRED',
          'the task did not end failed AUTHORIZATION_EXPIRED',
          'failed AUTHORIZATION_EXPIRED',
          describeMessage(r.result.msg),
        ),
      );
    },
  }),
  defineCase({
    id: 'authorization.auth-required.handshake-only',
    title: 'AUTH_REQUIRED is never used outside the handshake: task-level authorization failures use their own codes',
    profile: P,
    requirements: ['TAP-AUTH-009'],
    needs: GUARDED,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      await request(peer, 'tap.test.guarded', {});
      await request(peer, 'tap.test.guarded', {}, { authorization: expiredGrant(['tap.test.write']) });
      await request(peer, 'tap.test.guarded', {}, { authorization: grant(['x.y']) });
      await peer.barrier();
      const bad = peer.received.find((r) => r.msg.type === 'error' && r.msg.payload?.code === 'AUTH_REQUIRED');
      return verdictOf(
        'no AUTH_REQUIRED',
        check(!bad, 'AUTH_REQUIRED answered a task.request', 'PERMISSION_DENIED or AUTHORIZATION_EXPIRED', describeMessage(bad?.msg)),
      );
    },
  }),
  defineCase({
    id: 'authorization.isolation.unknown-task',
    title: "Another principal's task is answered exactly like a task that does not exist (UNKNOWN_TASK)",
    profile: P,
    requirements: ['TAP-AUTH-003', 'TAP-AUTH-002', 'TAP-TASK-013'],
    needs: { capabilities: ['tap.test.sleep'], ...TWO_SESSIONS },
    run: async (ctx) => {
      const a = need(await ctx.session());
      const b = need(await ctx.session());
      const t = need(await startTask(a, 'tap.test.sleep', { ms: 30_000 }));
      const ghost = `${t.taskId.slice(0, -1)}z`;
      const theirs = await statusOf(b, t.taskId);
      const none = await statusOf(b, ghost);
      const cancel = await b.post('task.cancel', {}, { task_id: t.taskId });
      const cr = need(await b.reply(cancel));
      const resume = await b.post('task.resume', { last_sequence: 0 }, { task_id: t.taskId });
      const rr = need(await b.reply(resume));
      const still = await statusOf(a, t.taskId);
      const stop = await a.post('task.cancel', {}, { task_id: t.taskId });
      need(await a.reply(stop));
      need(await collectUntilResult(a, t.taskId));
      require(checkError(theirs.msg, { code: 'UNKNOWN_TASK' }, "task.status for another session's task"));
      require(checkError(cr.msg, { code: 'UNKNOWN_TASK' }, "task.cancel for another session's task"));
      require(checkError(rr.msg, { code: 'UNKNOWN_TASK' }, "task.resume for another session's task"));
      return verdictOf(
        'invisible across principals',
        check(
          masked(theirs.msg, t.taskId) === masked(none.msg, ghost),
          "the answer about another principal's task differs from the answer about a missing one",
          masked(none.msg, ghost),
          masked(theirs.msg, t.taskId),
        ),
        check(
          still.msg.type === 'task.snapshot' && still.msg.payload.state !== 'cancelling',
          "the other session's cancel affected the task",
          'the task still running for its owner',
          describeMessage(still.msg),
        ),
      );
    },
  }),
  defineCase({
    id: 'authorization.isolation.task-id',
    title: 'A task_id used by one principal does not keep another from using it',
    profile: P,
    requirements: ['TAP-AUTH-004'],
    needs: { capabilities: ['tap.test.echo'], ...TWO_SESSIONS },
    run: async (ctx) => {
      const a = need(await ctx.session());
      const b = need(await ctx.session());
      const first = need(await runTask(a, 'tap.test.echo', 'a'));
      const second = await request(b, 'tap.test.echo', 'b', { taskId: first.taskId });
      const m = need(second.reply).msg;
      if (m.type === 'task.accepted') need(await collectUntilResult(b, first.taskId));
      return verdictOf(
        'both principals use the id',
        check(
          m.type === 'task.accepted',
          'a second principal could not use a task_id the first had used',
          'task.accepted',
          describeMessage(m),
        ),
      );
    },
  }),
  defineCase({
    id: 'authorization.isolation.idempotency',
    title: 'Idempotency records do not cross principals: the same key from another session creates a new task',
    profile: P,
    requirements: ['TAP-AUTH-002'],
    needs: { capabilities: ['tap.test.counter'], ...TWO_SESSIONS },
    run: async (ctx) => {
      const a = need(await ctx.session());
      const b = need(await ctx.session());
      const key = `iso-${a.ids.task('k')}`;
      need(await runTask(a, 'tap.test.counter', { key }, { idempotencyKey: key }));
      const r = await request(b, 'tap.test.counter', { key }, { idempotencyKey: key });
      const m = need(r.reply).msg;
      if (m.type === 'task.accepted') need(await collectUntilResult(b, r.sent.task_id!));
      return verdictOf(
        'a new task',
        check(
          m.type === 'task.accepted',
          "another principal's idempotency record answered this session",
          'task.accepted',
          describeMessage(m),
        ),
      );
    },
  }),
  defineCase({
    id: 'authorization.isolation.own-session',
    title: 'An unauthenticated session is a principal of its own: a second one cannot resume its stream',
    profile: P,
    requirements: ['TAP-AUTH-001', 'TAP-RES-006'],
    needs: { capabilities: ['tap.test.stream'], ...TWO_SESSIONS },
    run: async (ctx) => {
      const a = need(await ctx.session());
      const b = need(await ctx.session());
      const t = need(await runTask(a, 'tap.test.stream', { count: 2 }));
      const mark = b.mark();
      const sent = await b.post('task.resume', { last_sequence: 0 }, { task_id: t.taskId });
      const r = need(await b.reply(sent));
      await b.barrier();
      const leaked = b.sinceHere(mark).filter((m) => m.msg.task_id === t.taskId && m.msg.sequence !== undefined);
      return verdictOf(
        'nothing leaked',
        checkError(r.msg, { code: 'UNKNOWN_TASK' }, "task.resume of another principal's task"),
        check(
          leaked.length === 0,
          `${leaked.length} messages of another principal's task reached this session`,
          'none',
          `${leaked.length}`,
        ),
      );
    },
  }),
];

authorizationCases.push(
  defineCase({
    id: 'authorization.input-cannot-widen',
    title: 'Nothing in the input, the metadata or the payload widens what the grant allows',
    profile: P,
    requirements: ['TAP-SEC-004', 'TAP-AUTH-008'],
    needs: GUARDED,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const claims = { authorization: grant(['tap.test.write']), permissions: ['tap.test.write'], requires_permission: null };
      const a = await request(peer, 'tap.test.guarded', claims, {
        authorization: grant(['tap.test.read']),
        extra: { metadata: { permissions: ['tap.test.write'], 'x-grant': 'tap.test.write' } } as never,
      });
      const m = need(a.reply).msg;
      if (m.type === 'task.accepted') need(await collectUntilResult(peer, a.sent.task_id!));
      return verdictOf(
        'refused',
        checkError(m, { code: 'PERMISSION_DENIED' }, 'a guarded task whose input and metadata claim the permission'),
      );
    },
  }),
);
