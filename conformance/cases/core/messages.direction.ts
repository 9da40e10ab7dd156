/** core profile, Direction and unknown types (spec: messages#direction). */
import { type Case, defineCase } from '../../case.ts';
import { expectAlive, expectError, need, require, verdictOf } from '../kit.ts';

export const cases: Case[] = [
  defineCase({
    id: 'core.message.unknown-type',
    title: 'An unknown message type gets UNKNOWN_MESSAGE_TYPE, has no effect, and the session goes on',
    profile: 'core',
    requirements: ['TAP-MSG-002'],
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const sent = await peer.post(
        'task.frobnicate',
        { x: 1 },
        { task_id: peer.ids.task() },
        { deliberate: 'a type not in the catalogue' },
      );
      require(await expectError(peer, sent, { code: 'UNKNOWN_MESSAGE_TYPE' }, 'type "task.frobnicate"'));
      return verdictOf('refused; the session goes on', await expectAlive(peer, 'UNKNOWN_MESSAGE_TYPE'));
    },
  }),
  defineCase({
    id: 'core.message.wrong-direction',
    title: 'A message sent in the wrong direction (task.result from the requester) gets UNKNOWN_MESSAGE_TYPE',
    profile: 'core',
    requirements: ['TAP-MSG-002', 'TAP-MSG-001'],
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const sent = await peer.post(
        'task.result',
        { status: 'completed', output: 1 },
        { task_id: peer.ids.task(), sequence: 2 },
        { deliberate: 'an agent-to-requester type sent by the requester' },
      );
      require(await expectError(peer, sent, { code: 'UNKNOWN_MESSAGE_TYPE' }, 'task.result sent to the agent'));
      const ack = await peer.post(
        'handshake.go',
        {},
        { reply_to: 'x' },
        { deliberate: 'an agent-to-requester type sent by the requester' },
      );
      require(await expectError(peer, ack, { code: 'UNKNOWN_MESSAGE_TYPE' }, 'handshake.go sent to the agent'));
      return verdictOf('refused; the session goes on', await expectAlive(peer, 'UNKNOWN_MESSAGE_TYPE'));
    },
  }),
];
