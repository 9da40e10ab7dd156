/** idempotency profile, Duplicate messages (spec: idempotency#duplicate-messages). */
import { type Case, defineCase } from '../../case.ts';
import { countAfter, COUNTER, countOnce } from './kit.ts';
import { check, need, verdictOf } from '../kit.ts';
import { describeMessage, handshake } from '../../steps.ts';

export const cases: Case[] = [
  defineCase({
    id: 'idempotency.duplicate.request',
    title: 'A task.request repeated with the same message_id gets the original reply byte for byte and runs once',
    profile: 'idempotency',
    requirements: ['TAP-IDEM-001'],
    needs: COUNTER,
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const { key, req, first } = await countOnce(peer);
      const mark = peer.mark();
      await peer.send(req);
      await peer.send(req);
      await peer.barrier();
      const again = peer.since(mark).filter((r) => r.msg.reply_to === req.message_id);
      const n = await countAfter(peer, key);
      return verdictOf(
        'the original reply twice more; one execution',
        check(
          again.length === 2 && again.every((r) => r.text === first.text),
          'the repeats were not answered with the original reply, byte for byte',
          `two copies of ${first.msg.type}`,
          again.map((r) => describeMessage(r.msg)).join(', ') || 'nothing',
        ),
        check(n === 2, 'the counter shows the repeated message ran the work again', 'count 2 after one more distinct request', String(n)),
      );
    },
  }),
  defineCase({
    id: 'idempotency.duplicate.handshake',
    title: 'Repeated handshake messages and pings get their original replies byte for byte',
    profile: 'idempotency',
    requirements: ['TAP-IDEM-001', 'TAP-IDEM-016'],
    run: async (ctx) => {
      const peer = need(await ctx.connect());
      const hs = need(await handshake(peer));
      const ping = await peer.post('ping', {});
      const pong = need(await peer.reply(ping));
      const mark = peer.mark();
      await peer.send(hs.init);
      await peer.send(hs.ready!);
      await peer.send(ping);
      await peer.barrier();
      const after = peer.since(mark);
      const replyTo = (id: string) => after.filter((r) => r.msg.reply_to === id);
      const problems: string[] = [];
      for (const [sent, original] of [
        [hs.init, hs.ack],
        [hs.ready!, hs.go!],
        [ping, pong],
      ] as const) {
        const rs = replyTo(sent.message_id);
        // The repeated init carries no session_id, and is still a duplicate (idempotency#repeated-init).
        const ok = rs.length === 1 && rs[0]!.text === original.text;
        if (!ok)
          problems.push(
            `the repeated ${sent.type} got ${rs.map((r) => describeMessage(r.msg)).join(', ') || 'nothing'}${rs.length === 1 ? ' (not the original bytes)' : ''}`,
          );
      }
      return verdictOf(
        'original replies re-sent',
        check(problems.length === 0, problems.join('; '), 'the original ack, go and pong', problems.join('; ')),
      );
    },
  }),
];
