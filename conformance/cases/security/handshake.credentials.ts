/** security profile, Credentials in the handshake (spec: handshake#credentials). */
import type { Case } from '../../case.ts';
import { refusedTokensCase } from './kit.ts';

export const cases: Case[] = [
  refusedTokensCase(
    {
      id: 'security.token.required',
      title: 'An agent that requires bearer tokens answers a handshake.init without one with a fatal AUTH_REQUIRED and closes',
      requirements: ['TAP-HS-020', 'TAP-ERR-005'],
    },
    () => [[undefined, 'without credentials']],
  ),
];
