/** integrity profile, Skew (spec: integrity#skew). */
import { type Case, defineCase } from '../../case.ts';
import { refusedRequest, signed, SIGNED } from './kit.ts';
import { signMessage } from '../../mac.ts';
import type { Wire } from '../../session-state.ts';
import { completed, expectAlive, need, runTask, verdictOf } from '../kit.ts';

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
];
