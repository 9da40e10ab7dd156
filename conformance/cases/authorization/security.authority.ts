/** authorization profile, Authority comes from grants, not input (spec: security#authority). */
import { type Case, defineCase } from '../../case.ts';
import { GUARDED } from './kit.ts';
import { checkError, need, verdictOf } from '../kit.ts';
import { collectUntilResult, grant, request } from '../../steps.ts';

export const cases: Case[] = [
  defineCase({
    id: 'authorization.input-cannot-widen',
    title: 'Nothing in the input, the metadata or the payload widens what the grant allows',
    profile: 'authorization',
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
];
