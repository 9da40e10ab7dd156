/** core profile, Fields (spec: envelope#fields). */
import { type Case, defineCase } from '../../case.ts';
import { check, need, runTask, verdictOf } from '../kit.ts';

export const cases: Case[] = [
  defineCase({
    id: 'core.wire.agent-messages',
    title: 'Every message the agent sends is one valid JSON object naming the right peers, with fresh ids and no stray members',
    profile: 'core',
    spec: 'envelope#fields',
    reason:
      'the case checks every field of every message the agent sends, so it cites the Fields section that lists them; its requirements span the envelope',
    requirements: ['TAP-ENV-003', 'TAP-ENV-006', 'TAP-ENV-007', 'TAP-ENV-010', 'TAP-ENV-013', 'TAP-MSG-001', 'TAP-WS-004', 'TAP-CONF-004'],
    needs: { capabilities: ['tap.test.stream', 'tap.test.fail', 'tap.test.echo'] },
    run: async (ctx) => {
      // Every frame of every case is checked this way; this case names the rules and gives them a
      // varied workload of their own.
      const peer = need(await ctx.session());
      need(await runTask(peer, 'tap.test.stream', { count: 3, chunk: { nested: { a: [1, { b: 2 }] } } }));
      need(await runTask(peer, 'tap.test.fail', { code: 'INTERNAL_ERROR', message: 'x' }));
      need(await runTask(peer, 'tap.test.echo', { a: { b: { c: [null, true, 1.5, 'é€'] } } }));
      const s = await peer.post('task.status', {}, { task_id: peer.ids.task('absent') });
      need(await peer.reply(s));
      need(await peer.ping());
      const stamps = peer.received.filter((r) => !/Z$/.test(String(r.msg.timestamp)));
      return verdictOf(
        `${peer.received.length} messages checked`,
        check(
          stamps.length === 0,
          `the agent's ${stamps[0]?.msg.type} has timestamp ${stamps[0]?.msg.timestamp}, not RFC 3339 UTC`,
          'RFC 3339 with a trailing Z',
          String(stamps[0]?.msg.timestamp),
        ),
      );
    },
  }),
];
