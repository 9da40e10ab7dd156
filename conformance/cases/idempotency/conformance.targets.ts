/** idempotency profile, Conformance targets (spec: conformance#targets). */
import { BASE, chaosCase } from '../../chaos.ts';
import type { Case } from '../../case.ts';

export const cases: Case[] = [
  chaosCase('duplicate', 'idempotency', 'Under duplicated frames every request still has exactly one effect', { duplicate: 0.6 }, BASE, [
    'TAP-IDEM-001',
    'TAP-IDEM-005',
  ]),
];
