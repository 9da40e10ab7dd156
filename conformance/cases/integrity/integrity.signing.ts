/** integrity profile, Signing (spec: integrity#signing). */
import { type Case, defineCase } from '../../case.ts';
import { signed, SIGNED } from './kit.ts';
import { signMessage } from '../../mac.ts';
import { check, need, verdictOf } from '../kit.ts';
import { collectUntilResult, describeMessage } from '../../steps.ts';

export const cases: Case[] = [
  defineCase({
    id: 'integrity.signature.any-serialization',
    title: 'The receiver canonicalizes what it parsed: a signed message in another member order and spacing verifies',
    profile: 'integrity',
    spec: 'integrity#signing',
    reason:
      "the case signs a message in another serialization, which Signing describes; the rule it checks is verification's (TAP-INT-010)",
    requirements: ['TAP-INT-010', 'TAP-INT-009'],
    needs: { ...SIGNED, capabilities: ['tap.test.echo'] },
    run: async (ctx) => {
      const peer = await signed(ctx);
      const key = peer.state.integrity!;
      const m = signMessage(
        peer.envelope(
          'task.request',
          { capability: 'tap.test.echo', input: { b: 2, a: 1.5 } },
          { task_id: peer.ids.task() },
        ) as unknown as Record<string, unknown>,
        key.key,
        key.keyId,
      );
      const reordered = Object.fromEntries(Object.entries(m).reverse());
      await peer.sendText(JSON.stringify(reordered, null, 1).replace(/\n/g, ' '), 'the same signed message, members reversed, with spaces');
      const r = need(await peer.reply(m.message_id as string));
      if (r.msg.type === 'task.accepted') need(await collectUntilResult(peer, m.task_id as string));
      return verdictOf(
        'verified',
        check(
          r.msg.type === 'task.accepted',
          'a correctly signed message in another serialization was refused',
          'task.accepted',
          describeMessage(r.msg),
        ),
      );
    },
  }),
];
