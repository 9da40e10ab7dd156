/** stdio profile, Signals (spec: shutdown#signals). */
import { type Case, defineCase } from '../../case.ts';
import { orderlyExit, STDIO } from './kit.ts';

export const cases: Case[] = [
  defineCase({
    id: 'stdio.signal.sigterm',
    title: 'On SIGTERM the agent hands off, ends its task, says farewell and exits 0',
    profile: 'stdio',
    requirements: ['TAP-SHUT-014'],
    needs: { capabilities: ['tap.test.sleep'], ...STDIO },
    budgetMs: 45_000,
    run: (ctx) => orderlyExit(ctx, 'SIGTERM'),
  }),
  defineCase({
    id: 'stdio.signal.sigint',
    title: 'On SIGINT the agent shuts down as on SIGTERM and exits 0',
    profile: 'stdio',
    requirements: ['TAP-SHUT-014'],
    needs: { capabilities: ['tap.test.sleep'], ...STDIO },
    budgetMs: 45_000,
    run: (ctx) => orderlyExit(ctx, 'SIGINT'),
  }),
  defineCase({
    id: 'stdio.signal.twice',
    title: 'A second SIGTERM during shutdown starts no second shutdown; the agent still exits 0',
    profile: 'stdio',
    requirements: ['TAP-SHUT-015'],
    needs: { capabilities: ['tap.test.sleep'], ...STDIO },
    budgetMs: 45_000,
    run: (ctx) => orderlyExit(ctx, 'twice'),
  }),
];
