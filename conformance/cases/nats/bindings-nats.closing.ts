/** nats profile, Closing (spec: bindings-nats#closing). */
import type { CaseContext } from '../../context.ts';
import type { Peer } from '../../peer.ts';
import type { Outcome } from '../../verdict.ts';
import { type Case, defineCase } from '../../case.ts';
import { NATS } from './kit.ts';
import { handshake, initPayload } from '../../steps.ts';
import { check, show, verdictOf } from '../kit.ts';

async function closeCodeAfter(ctx: CaseContext, act: (peer: Peer) => Promise<void>): Promise<{ code?: number; problem?: Outcome }> {
  const c = await ctx.connect();
  if (!c.ok) return { problem: c.outcome };
  const peer = c.value;
  await act(peer);
  const closed = await peer.waitClosed(ctx.scaled(12_000));
  return { code: closed ? peer.closed?.code : undefined };
}

export const cases: Case[] = [
  defineCase({
    id: 'nats.close.farewell-1000',
    title: 'After the farewell the agent closes the connection with code 1000',
    profile: 'nats',
    requirements: ['TAP-NATS-014'],
    needs: NATS,
    run: async (ctx) => {
      const r = await closeCodeAfter(ctx, async (peer) => {
        if ((await handshake(peer)).ok) await peer.post('shutdown.request', { reason: 'conformance test', grace_ms: 200 });
      });
      if (r.problem) return r.problem;
      return verdictOf('1000', check(r.code === 1000, 'the connection did not close with 1000 after the farewell', '1000', show(r.code)));
    },
  }),
  defineCase({
    id: 'nats.close.fatal-1008',
    title: 'After a fatal error the agent closes the connection with code 1008',
    profile: 'nats',
    requirements: ['TAP-NATS-014'],
    needs: NATS,
    run: async (ctx) => {
      const r = await closeCodeAfter(ctx, async (peer) => {
        await peer.post('handshake.init', { ...initPayload(peer, {}), versions: ['9.0'] });
      });
      if (r.problem) return r.problem;
      return verdictOf(
        '1008',
        check(r.code === 1008, 'the connection did not close with 1008 after the fatal UNSUPPORTED_VERSION', '1008', show(r.code)),
      );
    },
  }),
];
