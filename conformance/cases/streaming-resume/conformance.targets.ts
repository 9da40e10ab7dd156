/** streaming-resume profile, Conformance targets (spec: conformance#targets). */
import { BASE, chaosCase } from '../../chaos.ts';
import type { Case } from '../../case.ts';

export const cases: Case[] = [
  chaosCase(
    'drop-resume',
    'streaming-resume',
    'Stream messages lost in transit are recovered by task.resume, complete and gap-free',
    { dropInbound: 0.4 },
    BASE,
    ['TAP-RES-002', 'TAP-RES-005'],
  ),
  chaosCase(
    'reconnect',
    'streaming-resume',
    'A dropped connection is resumed and no task, result or effect is lost or doubled',
    { dropConnection: true, duplicate: 0.2 },
    BASE,
    ['TAP-RES-010', 'TAP-IDEM-002'],
    'websocket',
  ),
];
