/** core profile, Fatal errors (spec: errors#fatal-errors). */
import { type Case, defineCase } from '../../case.ts';
import { check, checkError, expectAlive, need, require, show, verdictOf } from '../kit.ts';
import { describeMessage, startTask } from '../../steps.ts';

export const cases: Case[] = [
  defineCase({
    id: 'core.errors.fatal-flag',
    title: 'Non-fatal errors are not marked fatal and do not end the session',
    profile: 'core',
    requirements: ['TAP-ERR-006', 'TAP-ERR-007'],
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const sent = await peer.post('task.status', {}, { task_id: peer.ids.task('absent') });
      const r = need(await peer.reply(sent));
      require(
        check(
          r.msg.type === 'error' && r.msg.payload.fatal !== true,
          `an ${r.msg.payload?.code} error is marked fatal`,
          'fatal absent or false',
          show(r.msg.payload?.fatal),
        ),
      );
      return verdictOf('not fatal; the session goes on', await expectAlive(peer, 'a non-fatal error'));
    },
  }),
  defineCase({
    id: 'core.version.major-after-ack',
    title: 'After the ack, a message of another major version gets a fatal UNSUPPORTED_VERSION, and nothing follows it',
    profile: 'core',
    spec: 'errors#fatal-errors',
    reason:
      "the case checks that the UNSUPPORTED_VERSION after the ack is fatal (Fatal errors); the rule that calls for it is the version check's (TAP-VER-002)",
    requirements: ['TAP-VER-002', 'TAP-VER-042', 'TAP-ERR-042'],
    needs: { capabilities: ['tap.test.sleep'] },
    run: async (ctx) => {
      const peer = need(await ctx.session());
      // A running task: its hand-off, result or a farewell would be the messages that must not follow.
      need(await startTask(peer, 'tap.test.sleep', { ms: 600_000 }));
      const m = peer.envelope('ping', {}, { protocol: 'tap/2.0' });
      await peer.send(m);
      const r = need(await peer.reply(m));
      require(checkError(r.msg, { code: 'UNSUPPORTED_VERSION', fatal: true }, 'a ping in tap/2.0 in a 1.0 session'));
      const closed = await peer.waitClosed(ctx.scaled(5000));
      require(check(closed, 'the transport stayed open after the fatal UNSUPPORTED_VERSION', 'closed', 'open'));
      const after = peer.received.find((x) => x.index > r.index);
      return verdictOf(
        'refused, nothing more, closed',
        check(
          !after,
          `the agent sent ${describeMessage(after?.msg)} after its fatal error`,
          'nothing after the fatal error',
          describeMessage(after?.msg),
        ),
      );
    },
  }),
];
