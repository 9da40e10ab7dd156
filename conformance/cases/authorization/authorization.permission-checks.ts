/** authorization profile, Permission checks (spec: authorization#permission-checks). */
import { type Case, defineCase } from '../../case.ts';
import type { Wire } from '../../session-state.ts';
import type { Outcome } from '../../verdict.ts';
import { GUARDED } from './kit.ts';
import { check, checkError, need, require, runTask, show, verdictOf } from '../kit.ts';
import { describeMessage, grant, request } from '../../steps.ts';

function expiredGrant(permissions: string[]): Record<string, unknown> {
  return { permissions, resources: [], expires_at: new Date(Date.now() - 60_000).toISOString() };
}

/** FAIL unless a PERMISSION_DENIED names the permission tap.test.guarded requires in details.required_permission. */
function namesPermission(m: Wire): Outcome | null {
  return check(
    m.payload.details?.required_permission === 'tap.test.write',
    'details.required_permission does not name the permission',
    'tap.test.write',
    show(m.payload.details),
  );
}

export const cases: Case[] = [
  defineCase({
    id: 'authorization.permission.missing-grant',
    title: 'A task.request without authorization for a capability requiring a permission gets PERMISSION_DENIED naming it',
    profile: 'authorization',
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
      return verdictOf('refused', namesPermission(m));
    },
  }),
  defineCase({
    id: 'authorization.permission.lacking',
    title: 'A grant lacking the required permission gets PERMISSION_DENIED, not retryable',
    profile: 'authorization',
    requirements: ['TAP-AUTH-008'],
    needs: GUARDED,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const { reply } = await request(peer, 'tap.test.guarded', {}, { authorization: grant(['tap.test.read', 'other.perm']) });
      const m = need(reply).msg;
      require(checkError(m, { code: 'PERMISSION_DENIED' }, 'a grant without tap.test.write'));
      return verdictOf('refused', namesPermission(m));
    },
  }),
  defineCase({
    id: 'authorization.permission.granted',
    title: 'A grant with the required permission lets the task run',
    profile: 'authorization',
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
    profile: 'authorization',
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
    id: 'authorization.auth-required.handshake-only',
    title: 'AUTH_REQUIRED is never used outside the handshake: task-level authorization failures use their own codes',
    profile: 'authorization',
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
];
