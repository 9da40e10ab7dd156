/** idempotency profile, Repeated handshake.init (spec: idempotency#repeated-init). */
import { type Case, defineCase } from '../../case.ts';
import { check, need, require, verdictOf, wrongReply } from '../kit.ts';
import { describeMessage, initPayload } from '../../steps.ts';

export const cases: Case[] = [
  defineCase({
    id: 'idempotency.duplicate.init-newer-minor',
    title: 'A repeat of an init written in a newer minor version gets the original ack, not UNSUPPORTED_VERSION',
    profile: 'idempotency',
    requirements: ['TAP-IDEM-040', 'TAP-IDEM-016'],
    run: async (ctx) => {
      const peer = need(await ctx.connect());
      // A requester of a minor newer than any the agent speaks writes it in its init and lists the
      // older ones too (spec: envelope#protocol): tap/1.9, above TAP 1.1 and 1.0.
      const init = peer.envelope('handshake.init', initPayload(peer, { versions: ['1.9', '1.1', '1.0'] }), { protocol: 'tap/1.9' });
      await peer.send(init);
      const ack = need(await peer.reply(init));
      if (ack.msg.type !== 'handshake.ack') return wrongReply('an init in tap/1.9 listing 1.1 and 1.0', 'handshake.ack', ack.msg);
      const s = peer.state;
      s.version = ack.msg.payload.version;
      s.sessionId = ack.msg.payload.session_id;
      s.params = ack.msg.payload.params;
      s.agentId = ack.msg.payload.agent?.agent_id;
      s.bound = true;
      const mark = peer.mark();
      await peer.send(init);
      const again = need(await peer.waitFor((r) => r.index >= mark && r.msg.reply_to === init.message_id, 'a reply to the repeated init'));
      require(
        check(
          again.text === ack.text,
          `the repeat of the tap/1.9 init got ${describeMessage(again.msg)}, not the original handshake.ack`,
          'the original handshake.ack byte for byte',
          describeMessage(again.msg),
        ),
      );
      const ready = await peer.post('handshake.ready', { params: ack.msg.payload.params });
      const go = need(await peer.reply(ready));
      return verdictOf(
        'the original ack; the handshake goes on',
        check(go.msg.type === 'handshake.go', 'the handshake did not complete after the repeat', 'handshake.go', describeMessage(go.msg)),
      );
    },
  }),
];
