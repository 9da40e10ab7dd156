/** core profile, Source and target (spec: envelope#source-and-target). */
import { type Case, defineCase } from '../../case.ts';
import { fail, pass } from '../../verdict.ts';
import { expectAlive, expectError, need, require, verdictOf } from '../kit.ts';

export const cases: Case[] = [
  defineCase({
    id: 'core.handshake.target-own-id',
    title: "A handshake.init may name the agent's own id as target",
    profile: 'core',
    spec: 'envelope#source-and-target',
    reason:
      "the case proves that Source and target lets handshake.init name the agent's own id (TAP-ENV-008); the rule it checks first is handshake.init's (TAP-HS-003)",
    requirements: ['TAP-HS-003', 'TAP-ENV-008'],
    run: async (ctx) => {
      const id = ctx.env.probe.agentId;
      if (!id) return fail('the agent never told its id (the first handshake failed)', 'an agent id', 'none');
      need(await ctx.sessionWith({ target: id }));
      return pass(`target ${id} accepted`);
    },
  }),
  defineCase({
    id: 'core.envelope.target-star-elsewhere',
    title: 'A target of "*" outside handshake.init is INVALID_MESSAGE',
    profile: 'core',
    requirements: ['TAP-ENV-009'],
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const sent = await peer.post(
        'task.status',
        {},
        { task_id: peer.ids.task(), target: '*' },
        { deliberate: 'target "*" outside handshake.init' },
      );
      require(await expectError(peer, sent, { code: 'INVALID_MESSAGE' }, 'task.status with target "*"'));
      return verdictOf('refused; the session goes on', await expectAlive(peer, 'INVALID_MESSAGE'));
    },
  }),
];
