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
];
