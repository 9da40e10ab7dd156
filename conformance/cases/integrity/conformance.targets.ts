/** integrity profile, Conformance targets (spec: conformance#targets). */
import { BASE, chaosCase } from '../../chaos.ts';
import type { Case } from '../../case.ts';

export const cases: Case[] = [
  chaosCase('forge', 'integrity', 'Forged senders and sessions interleaved with real traffic have no effect', { forge: 0.8 }, BASE, [
    'TAP-INT-001',
    'TAP-INT-003',
  ]),
];
