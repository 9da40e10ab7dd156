/** websocket profile, Close codes (spec: bindings-websocket#close-codes). */
import type { CaseContext } from '../../context.ts';
import type { Peer } from '../../peer.ts';
import { judgeOccurrence, type Outcome, timingWindow } from '../../verdict.ts';
import { type Case, defineCase } from '../../case.ts';
import { WS } from './kit.ts';
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
    id: 'websocket.close.farewell-1000',
    title: 'After the farewell the connection closes with code 1000',
    profile: 'websocket',
    requirements: ['TAP-WS-010'],
    needs: WS,
    run: async (ctx) => {
      const r = await closeCodeAfter(ctx, async (peer) => {
        if ((await handshake(peer)).ok) await peer.post('shutdown.request', { reason: 'conformance test', grace_ms: 200 });
      });
      if (r.problem) return r.problem;
      return verdictOf('1000', check(r.code === 1000, 'the connection did not close with 1000 after the farewell', '1000', show(r.code)));
    },
  }),
  defineCase({
    id: 'websocket.close.fatal-1008',
    title: 'After a fatal error the connection closes with code 1008',
    profile: 'websocket',
    requirements: ['TAP-WS-011'],
    needs: WS,
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
  defineCase({
    id: 'websocket.close.handshake-timeout-1008',
    title: 'After a handshake step timed out the connection closes with code 1008',
    profile: 'websocket',
    requirements: ['TAP-WS-011'],
    needs: WS,
    budgetMs: 40_000,
    run: async (ctx) => {
      const c = await ctx.connect();
      if (!c.ok) return c.outcome;
      const closed = await c.value.waitClosed(timingWindow(10_000, ctx.env.timeScale).latestMs);
      if (!closed) return judgeOccurrence(timingWindow(10_000, ctx.env.timeScale), undefined, 'the close of a stalled handshake');
      return verdictOf(
        '1008',
        check(c.value.closed?.code === 1008, 'a stalled handshake was not closed with 1008', '1008', show(c.value.closed?.code)),
      );
    },
  }),
];
