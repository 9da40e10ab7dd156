/** tasks profile, Conformance targets (spec: conformance#targets). */
import { BASE, chaosCase } from '../../chaos.ts';
import type { Case } from '../../case.ts';

export const cases: Case[] = [
  chaosCase('reorder', 'tasks', 'Under delayed and reordered frames the task rules still hold', { delay: 0.5 }, BASE, [
    'TAP-TASK-005',
    'TAP-TASK-018',
  ]),
  chaosCase(
    'mix',
    'tasks',
    'All faults at once: duplicates, delays, chops, drops, garbage, forgeries and a flood',
    { duplicate: 0.2, delay: 0.2, chop: 0.2, dropInbound: 0.2, garbage: 0.3, forge: 0.3, flood: true },
    BASE,
    ['TAP-ERR-008', 'TAP-IDEM-001'],
  ),
];
