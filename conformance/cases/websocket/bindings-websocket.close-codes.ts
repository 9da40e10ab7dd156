/** websocket profile, Close codes (spec: bindings-websocket#close-codes). */
import { judgeOccurrence, timingWindow } from '../../verdict.ts';
import { type Case, defineCase } from '../../case.ts';
import { WS } from './kit.ts';
import { closeCodeCases } from '../connection.ts';
import { check, show, verdictOf } from '../kit.ts';

export const cases: Case[] = [
  ...closeCodeCases(
    { profile: 'websocket', needs: WS },
    {
      farewell: {
        id: 'websocket.close.farewell-1000',
        title: 'After the farewell the connection closes with code 1000',
        requirements: ['TAP-WS-010'],
      },
      fatal: {
        id: 'websocket.close.fatal-1008',
        title: 'After a fatal error the connection closes with code 1008',
        requirements: ['TAP-WS-011'],
      },
    },
  ),
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
