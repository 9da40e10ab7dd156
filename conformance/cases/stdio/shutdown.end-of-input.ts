/** stdio profile, End of input (spec: shutdown#end-of-input). */
import { type Case, defineCase } from '../../case.ts';
import { orderlyExit, STDIO } from './kit.ts';

export const cases: Case[] = [
  defineCase({
    id: 'stdio.eof.orderly',
    title: 'At end of input the agent hands off its task, ends it SHUTTING_DOWN, says farewell and exits 0',
    profile: 'stdio',
    requirements: ['TAP-SHUT-016', 'TAP-STDIO-006', 'TAP-SHUT-040'],
    needs: { capabilities: ['tap.test.sleep'], ...STDIO },
    budgetMs: 45_000,
    run: (ctx) => orderlyExit(ctx, 'eof'),
  }),
];
