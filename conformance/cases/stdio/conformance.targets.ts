/** stdio profile, Conformance targets (spec: conformance#targets). */
import { BASE, chaosCase } from '../../chaos.ts';
import type { Case } from '../../case.ts';

export const cases: Case[] = [
  chaosCase(
    'chop',
    'stdio',
    'Under frames chopped across writes every message is still read whole',
    { chop: 0.8 },
    BASE,
    ['TAP-STDIO-001'],
    'stdio',
  ),
];
