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
  defineCase({
    id: 'core.errors.target-of-a-frame-not-json',
    title:
      'An error for a frame that is not JSON is addressed to unknown before the ack, even when the text shows a source, and to the bound requester after it',
    profile: 'core',
    requirements: ['TAP-ERR-041', 'TAP-ENV-007'],
    run: async (ctx) => {
      const early = need(await ctx.connect());
      let mark = early.mark();
      const text = `{"protocol":"tap/1.0","type":"ping","source":"${early.state.selfId}",`;
      await early.sendText(text, 'truncated JSON whose text names the harness as source');
      const r1 = need(await early.waitFor((r) => r.index >= mark && r.msg.type === 'error', 'an error for truncated JSON before the ack'));
      // The source the text shows, if the agent recovers it as it may recover reply_to, else unknown.
      require(
        check(
          r1.msg.target === 'unknown' || r1.msg.target === early.state.selfId,
          'before the ack, the error for a frame that is not JSON is addressed neither to the source its text shows nor to unknown',
          `target ${early.state.selfId} or unknown`,
          show(r1.msg.target),
        ),
      );
      const peer = need(await ctx.session());
      mark = peer.mark();
      await peer.sendText('this is not JSON', 'a frame that is not JSON, after the handshake');
      const r2 = need(
        await peer.waitFor((r) => r.index >= mark && r.msg.type === 'error', 'an error for a frame that is not JSON after the ack'),
      );
      return verdictOf(
        'addressed as required',
        check(
          r2.msg.target === peer.state.selfId,
          'after the ack, the error for a frame that is not JSON is not addressed to the bound requester',
          `target ${peer.state.selfId}`,
          show(r2.msg.target),
        ),
      );
    },
  }),
];
