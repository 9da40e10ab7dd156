/** stdio profile, Signals (spec: shutdown#signals): SIGTERM and SIGINT end the agent in order, once. */
import type { Case } from '../../case.ts';
import { orderlyExitCase } from './kit.ts';

export const cases: Case[] = [
  orderlyExitCase('SIGTERM', {
    id: 'stdio.signal.sigterm',
    title: 'On SIGTERM the agent hands off, ends its task, says farewell and exits 0',
    requirements: ['TAP-SHUT-014'],
  }),
  orderlyExitCase('SIGINT', {
    id: 'stdio.signal.sigint',
    title: 'On SIGINT the agent shuts down as on SIGTERM and exits 0',
    requirements: ['TAP-SHUT-014'],
  }),
  orderlyExitCase('twice', {
    id: 'stdio.signal.twice',
    title: 'A second SIGTERM during shutdown starts no second shutdown; the agent still exits 0',
    requirements: ['TAP-SHUT-015'],
  }),
];
