/** stdio profile, End of input (spec: shutdown#end-of-input). */
import type { Case } from '../../case.ts';
import { orderlyExitCase } from './kit.ts';

export const cases: Case[] = [
  orderlyExitCase('eof', {
    id: 'stdio.eof.orderly',
    title: 'At end of input the agent hands off its task, ends it SHUTTING_DOWN, says farewell and exits 0',
    requirements: ['TAP-SHUT-016', 'TAP-STDIO-006', 'TAP-SHUT-040'],
  }),
];
