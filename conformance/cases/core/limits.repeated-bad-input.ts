/** core profile, Repeated bad input (spec: limits#repeated-bad-input). */
import type { CaseContext } from '../../context.ts';
import type { Outcome } from '../../verdict.ts';
import { expectAlive, need, verdictOf } from '../kit.ts';
import { type Case, defineCase } from '../../case.ts';

/** Sends a message of one kind of bad input and returns the reply (or nothing). */
async function refusedCount(ctx: CaseContext, n: number): Promise<Outcome | null> {
  const peer = need(await ctx.session());
  for (let i = 0; i < n; i++) await peer.sendText(`{"bad": ${i}`, `bad input ${i + 1} of ${n}`);
  await ctx.sleep(100);
  return expectAlive(peer, `${n} malformed messages`);
}

export const cases: Case[] = [
  defineCase({
    id: 'core.limits.bad-input-tolerance',
    title: 'The agent does not end a session for bad input before refusing at least 32 messages',
    profile: 'core',
    requirements: ['TAP-LIM-012'],
    run: async (ctx) => verdictOf('the session survived 31 malformed messages', await refusedCount(ctx, 31)),
  }),
];
