/** core profile, Conformance targets (spec: conformance#targets). */
import { BASE, chaosCase } from '../../chaos.ts';
import type { Case } from '../../case.ts';

export const cases: Case[] = [
  chaosCase(
    'garbage',
    'core',
    'Malformed JSON, invalid UTF-8, oversized, unknown types and fields interleaved with real traffic break nothing',
    { garbage: 0.9 },
    BASE,
    ['TAP-ERR-008', 'TAP-LIM-001'],
  ),
  chaosCase('flood', 'core', 'A flood of pings in the middle of real traffic breaks nothing', { flood: true }, BASE, [
    'TAP-ERR-008',
    'TAP-LIM-008',
  ]),
];
