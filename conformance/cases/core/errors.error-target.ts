/** core profile, Addressing an error (spec: errors#error-target). */
import { type Case, defineCase } from '../../case.ts';
import { check, need, require, show, verdictOf } from '../kit.ts';

export const cases: Case[] = [
  defineCase({
    id: 'core.errors.target-before-session',
    title: "Before the ack an error is addressed to the offending message's source, or to unknown when it has none",
    profile: 'core',
    requirements: ['TAP-ERR-041'],
    run: async (ctx) => {
      const peer = need(await ctx.connect());
      let mark = peer.mark();
      await peer.sendText('this is not JSON', 'a frame with no source to read');
      const r1 = need(await peer.waitFor((r) => r.index >= mark && r.msg.type === 'error', 'an error for a frame that is not JSON'));
      require(
        check(
          r1.msg.target === 'unknown',
          'the error for a frame without a source is not addressed to unknown',
          'target unknown',
          show(r1.msg.target),
        ),
      );
      mark = peer.mark();
      const { timestamp: _t, ...noTime } = peer.envelope('ping', {});
      await peer.send(noTime as typeof noTime & { timestamp: string }, { deliberate: 'a ping without timestamp' });
      const r2 = need(await peer.waitFor((r) => r.index >= mark && r.msg.type === 'error', 'an error for a ping without timestamp'));
      return verdictOf(
        'addressed as required',
        check(
          r2.msg.target === peer.state.selfId,
          'the error for a message with a readable source is not addressed to that source',
          `target ${peer.state.selfId}`,
          show(r2.msg.target),
        ),
      );
    },
  }),
];
