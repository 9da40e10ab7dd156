/** core profile, Protocol (spec: envelope#protocol). */
import { type Case, defineCase } from '../../case.ts';
import { ECHO } from './kit.ts';
import { check, need, runTask, verdictOf } from '../kit.ts';

export const cases: Case[] = [
  defineCase({
    id: 'core.envelope.protocol-version',
    title: 'Every agent message after the ack carries "tap/" and the negotiated version',
    profile: 'core',
    requirements: ['TAP-ENV-005', 'TAP-ENV-010'],
    needs: ECHO,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      need(await runTask(peer, 'tap.test.echo', {}));
      const bad = peer.received.find((r) => r.msg.type !== 'handshake.ack' && r.msg.protocol !== `tap/${peer.state.version}`);
      return verdictOf(
        `every message says tap/${peer.state.version}`,
        check(!bad, `the agent's ${bad?.msg.type} says ${bad?.msg.protocol}`, `tap/${peer.state.version}`, String(bad?.msg.protocol)),
      );
    },
  }),
];
