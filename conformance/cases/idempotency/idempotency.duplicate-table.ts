/** idempotency profile, Duplicate table (spec: idempotency#duplicate-table). */
import { type Case, defineCase } from '../../case.ts';
import { COUNTER, countOnce } from './kit.ts';
import { check, need, verdictOf } from '../kit.ts';
import { describeMessage } from '../../steps.ts';

export const cases: Case[] = [
  defineCase({
    id: 'idempotency.duplicate-table',
    title: 'The agent remembers at least the 1 024 most recent message ids of a session',
    profile: 'idempotency',
    requirements: ['TAP-IDEM-004'],
    needs: COUNTER,
    budgetMs: 40_000,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const { req, first } = await countOnce(peer);
      const pings = [];
      for (let i = 0; i < 1020; i++) pings.push(await peer.post('ping', {}));
      need(await peer.reply(pings[pings.length - 1]!, ctx.scaled(20_000)));
      const mark = peer.mark();
      await peer.send(req);
      const again = need(
        await peer.waitFor((m) => m.index >= mark && m.msg.reply_to === req.message_id, 'the original reply after 1 020 other messages'),
      );
      return verdictOf(
        'still remembered',
        check(again.text === first.text, 'the repeat was not answered with the original reply', first.msg.type, describeMessage(again.msg)),
      );
    },
  }),
];
