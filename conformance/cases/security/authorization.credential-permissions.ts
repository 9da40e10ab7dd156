/** security profile, Credentials that carry permissions (spec: authorization#credential-permissions). */
import { type Case, defineCase } from '../../case.ts';
import { collectUntilResult, describeMessage, grant, request } from '../../steps.ts';
import { check, checkError, need, require, verdictOf } from '../kit.ts';
import { subject, TOKENS, tokenSession } from './kit.ts';

export const cases: Case[] = [
  defineCase({
    id: 'security.token.scopes',
    title: "A token's scopes bound the grant: a permission the grant lists but the token does not hold is PERMISSION_DENIED",
    profile: 'security',
    requirements: ['TAP-AUTH-010', 'TAP-AUTH-008'],
    needs: { ...TOKENS, capabilities: ['tap.test.guarded'] },
    run: async (ctx) => {
      const without = await tokenSession(ctx, subject(ctx, 'unscoped'), '');
      const denied = await request(without, 'tap.test.guarded', {}, { authorization: grant(['tap.test.write']) });
      const d = need(denied.reply).msg;
      if (d.type === 'task.accepted') need(await collectUntilResult(without, denied.sent.task_id!));
      require(checkError(d, { code: 'PERMISSION_DENIED' }, 'tap.test.guarded granted tap.test.write under a token with no scopes'));
      // With the run's scopes the same request runs: the token, not the request, made the difference.
      const scoped = await tokenSession(ctx, subject(ctx, 'scoped'));
      const allowed = await request(scoped, 'tap.test.guarded', {}, { authorization: grant(['tap.test.write']) });
      const a = need(allowed.reply).msg;
      if (a.type === 'task.accepted') need(await collectUntilResult(scoped, allowed.sent.task_id!));
      return verdictOf(
        'bounded by the token',
        check(
          d.payload?.details?.required_permission === 'tap.test.write',
          'the PERMISSION_DENIED does not name the permission in details.required_permission',
          'tap.test.write',
          JSON.stringify(d.payload?.details?.required_permission),
        ),
        check(
          a.type === 'task.accepted',
          `under a token with the run's scopes (${ctx.env.security!.tokens!.scope}) the request was refused too: give --jwt-scope the scopes that grant tap.test.write`,
          'task.accepted',
          describeMessage(a),
        ),
      );
    },
  }),
];
