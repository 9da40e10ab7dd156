/** integrity profile, Skew (spec: integrity#skew). */
import { type Case, defineCase } from '../../case.ts';
import { refusedRequest, signed, SIGNED } from './kit.ts';
import { signMessage } from '../../mac.ts';
import type { Wire } from '../../session-state.ts';
import { check, completed, expectAlive, need, require, runTask, verdictOf } from '../kit.ts';
import { describeMessage } from '../../steps.ts';
import { unimplemented } from '../../verdict.ts';
import { setTimeout as wait } from 'node:timers/promises';

export const cases: Case[] = [
  defineCase({
    id: 'integrity.skew.replay',
    title: 'Under integrity a first-seen message with a timestamp outside the skew window gets REPLAY_DETECTED and has no effect',
    profile: 'integrity',
    requirements: ['TAP-INT-014'],
    needs: { ...SIGNED, capabilities: ['tap.test.echo'] },
    run: async (ctx) => {
      const peer = await signed(ctx);
      const key = peer.state.integrity!;
      const old = new Date(Date.now() - 3600_000).toISOString();
      await refusedRequest(
        peer,
        (m) =>
          signMessage(
            { ...m, signature: undefined, timestamp: old } as unknown as Record<string, unknown>,
            key.key,
            key.keyId,
          ) as unknown as Wire,
        'REPLAY_DETECTED',
        'a signed task.request an hour old',
      );
      const future = new Date(Date.now() + 3600_000).toISOString();
      await refusedRequest(
        peer,
        (m) =>
          signMessage(
            { ...m, signature: undefined, timestamp: future } as unknown as Record<string, unknown>,
            key.key,
            key.keyId,
          ) as unknown as Wire,
        'REPLAY_DETECTED',
        'a signed task.request an hour in the future',
      );
      return verdictOf('refused', await expectAlive(peer, 'REPLAY_DETECTED'));
    },
  }),
  defineCase({
    id: 'integrity.skew.not-without-integrity',
    title: 'Without integrity timestamps are not checked for skew',
    profile: 'integrity',
    requirements: ['TAP-INT-015'],
    needs: { capabilities: ['tap.test.echo'] },
    run: async (ctx) => {
      const peer = need(await ctx.session());
      const t = need(await runTask(peer, 'tap.test.echo', 'old', { extra: { timestamp: new Date(Date.now() - 3600_000).toISOString() } }));
      return verdictOf('accepted', completed(t.result, 'an old timestamp was refused in an unsigned session'));
    },
  }),
  defineCase({
    id: 'integrity.skew.not-on-duplicates',
    title: 'Under integrity a repeat of a message received inside the skew window is answered as a duplicate once the window has passed',
    profile: 'integrity',
    requirements: ['TAP-INT-015', 'TAP-IDEM-001'],
    needs: SIGNED,
    budgetMs: 20_000,
    run: async (ctx) => {
      const peer = await signed(ctx);
      const key = peer.state.integrity!;
      // 298 s old: inside the default window of 300 s now, outside it a few seconds later.
      const sentAt = Date.now() - 298_000;
      const ping = signMessage(
        { ...peer.envelope('ping', {}), timestamp: new Date(sentAt).toISOString() } as unknown as Record<string, unknown>,
        key.key,
        key.keyId,
      ) as unknown as Wire;
      await peer.send(ping, { deliberate: 'a signed ping 298 s old, inside the default skew window' });
      const first = need(await peer.reply(ping));
      if (first.msg.type === 'error' && first.msg.payload.code === 'REPLAY_DETECTED')
        return unimplemented(
          'the agent refused a ping 298 s old: its skew window is below the default 300 s, so no repeat can fall outside it',
        );
      require(
        check(
          first.msg.type === 'pong',
          'a signed ping inside the skew window was not answered with pong',
          'pong',
          describeMessage(first.msg),
        ),
      );
      await wait(Math.max(0, sentAt + 303_000 - Date.now()));
      const mark = peer.mark();
      await peer.send(ping, { deliberate: 'the same ping again, now outside the skew window' });
      const again = need(
        await peer.waitFor((r) => r.index >= mark && r.msg.reply_to === ping.message_id, 'the reply to the repeated ping'),
      );
      return verdictOf(
        'the original pong',
        check(
          again.text === first.text,
          'a repeat of a message first received inside the skew window was not answered with the original reply (the skew check was applied to a duplicate)',
          'the original pong, byte for byte',
          describeMessage(again.msg),
        ),
      );
    },
  }),
];
