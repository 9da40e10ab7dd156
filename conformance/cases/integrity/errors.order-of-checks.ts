/** integrity profile, Order of checks (spec: errors#order-of-checks). */
import { type Case, defineCase } from '../../case.ts';
import { refusedRequest, signed, SIGNED } from './kit.ts';
import { pass } from '../../verdict.ts';

export const cases: Case[] = [
  defineCase({
    id: 'integrity.order.signature-before-identity',
    title: 'A forged source with a bad signature gets INVALID_SIGNATURE: the signature is checked before identity',
    profile: 'integrity',
    requirements: ['TAP-ERR-010'],
    needs: { ...SIGNED, capabilities: ['tap.test.echo'] },
    run: async (ctx) => {
      const peer = await signed(ctx);
      await refusedRequest(peer, (m) => ({ ...m, source: 'mallory' }), 'INVALID_SIGNATURE', 'a forged source whose MAC no longer matches');
      return pass('INVALID_SIGNATURE first');
    },
  }),
  defineCase({
    id: 'integrity.order.signature-before-skew',
    title: 'A stale message with a bad signature gets INVALID_SIGNATURE: the signature is checked before the skew',
    profile: 'integrity',
    requirements: ['TAP-ERR-010'],
    needs: { ...SIGNED, capabilities: ['tap.test.echo'] },
    run: async (ctx) => {
      const peer = await signed(ctx);
      // An hour old: outside any skew window, and the MAC no longer matches the timestamp.
      const stale = new Date(Date.now() - 3_600_000).toISOString();
      await refusedRequest(peer, (m) => ({ ...m, timestamp: stale }), 'INVALID_SIGNATURE', 'a stale timestamp set after signing');
      return pass('INVALID_SIGNATURE before REPLAY_DETECTED');
    },
  }),
];
